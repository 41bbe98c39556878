package server

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/node"
)

func TestNewLogger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, format, level, wantErr string
	}{
		{"JSONInfo", "json", "info", ""},
		{"ConsoleDebug", "console", "debug", ""},
		{"BadFormat", "xml", "info", "--log-format"},
		{"BadLevel", "json", "loud", "--log-level"},
		{"EmptyLevel", "json", "", "--log-level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := newLogger(tc.format, tc.level)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()

	t.Run("NoBinaries", func(t *testing.T) {
		t.Parallel()
		err := explain(fmt.Errorf("start managed postgres: %w", node.ErrNoPostgresBinaries), node.Config{PGBinDir: "/opt/pg"})
		require.ErrorIs(t, err, node.ErrNoPostgresBinaries)
		require.Contains(t, err.Error(), "in /opt/pg (--pg-bin-dir)")
		require.Contains(t, err.Error(), "--postgres")
		require.NotContains(t, err.Error(), "\n")
	})

	t.Run("DataDir", func(t *testing.T) {
		t.Parallel()
		err := explain(fmt.Errorf("%w: x is not a directory", node.ErrDataDir), node.Config{})
		require.ErrorIs(t, err, node.ErrDataDir)
		require.Contains(t, err.Error(), "--data-dir")
	})

	t.Run("OtherErrorsUnchanged", func(t *testing.T) {
		t.Parallel()
		other := errors.New("boom")
		require.Equal(t, other, explain(other, node.Config{}))
		require.NoError(t, explain(nil, node.Config{}))
	})
}

func TestCallbackAllowCIDRFlag(t *testing.T) {
	// Not parallel: one case sets the environment.
	parse := func(flags []cli.Flag, args ...string) (node.Config, error) {
		var cfg node.Config
		var err error
		app := &cli.App{Flags: flags, DisableSliceFlagSeparator: true, Action: func(c *cli.Context) error {
			cfg, err = nodeConfig(c)
			return nil
		}}
		require.NoError(t, app.Run(append([]string{"harvestd"}, args...)))
		return cfg, err
	}
	for name, flags := range map[string][]cli.Flag{"dev": devFlags(), "agent": agentFlags()} {
		t.Run(name, func(t *testing.T) {
			cfg, err := parse(flags)
			require.NoError(t, err)
			require.Nil(t, cfg.CallbackAllowCIDRs)

			cfg, err = parse(flags, "--callback-allow-cidr", "10.0.0.0/8, fd00::/8", "--callback-allow-cidr", "192.168.1.7")
			require.NoError(t, err)
			require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"),
				netip.MustParsePrefix("192.168.1.7/32")}, cfg.CallbackAllowCIDRs)

			_, err = parse(flags, "--callback-allow-cidr", "10.0.0.0/8,10.0.0.0/33")
			require.EqualError(t, err, `--callback-allow-cidr "10.0.0.0/33": want an address range like 10.0.0.0/8 or fd00::/8`)
			_, err = parse(flags, "--callback-allow-cidr", "intranet")
			require.ErrorContains(t, err, `--callback-allow-cidr "intranet"`)
			_, err = parse(flags, "--callback-allow-cidr", "10.1.2.3/8")
			require.EqualError(t, err, `--callback-allow-cidr "10.1.2.3/8": host bits are set; did you mean 10.0.0.0/8?`)
		})
	}

	t.Run("Env", func(t *testing.T) {
		t.Setenv("HARVEST_CALLBACK_ALLOW_CIDR", "172.16.0.0/12,127.0.0.1/32")
		cfg, err := parse(devFlags())
		require.NoError(t, err)
		require.Equal(t, []netip.Prefix{netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("127.0.0.1/32")}, cfg.CallbackAllowCIDRs)
	})
}

func TestActivityWorkersFlag(t *testing.T) {
	// Not parallel: urfave/cli's help flag is a shared global the apps of
	// parallel tests would write at once.
	parse := func(args ...string) (node.Config, error) {
		var cfg node.Config
		var err error
		app := &cli.App{Flags: devFlags(), Action: func(c *cli.Context) error {
			cfg, err = nodeConfig(c)
			return nil
		}}
		require.NoError(t, app.Run(append([]string{"harvestd"}, args...)))
		return cfg, err
	}
	cfg, err := parse()
	require.NoError(t, err)
	require.Equal(t, engine.ActivityWorkersDefault, cfg.ActivityWorkers)

	cfg, err = parse("--activity-workers", "8")
	require.NoError(t, err)
	require.Equal(t, 8, cfg.ActivityWorkers)

	_, err = parse("--activity-workers", "0")
	require.ErrorContains(t, err, "--activity-workers must be positive")
}

func TestGCPercentFlag(t *testing.T) {
	// Not parallel: the collector's target and the environment are global.
	t.Setenv("GOGC", "") // restored when the test ends
	require.NoError(t, os.Unsetenv("GOGC"))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	apply := func(args ...string) (int, error) {
		var err error
		app := &cli.App{Flags: devFlags(), Action: func(c *cli.Context) error {
			err = setGCPercent(c, zerolog.Nop())
			return nil
		}}
		debug.SetGCPercent(100)
		require.NoError(t, app.Run(append([]string{"harvestd"}, args...)))
		return debug.SetGCPercent(100), err
	}
	cases := []struct {
		name string
		args []string
		env  string
		want int
	}{
		{name: "Default", want: gcPercentDefault},
		{name: "Flag", args: []string{"--gc-percent", "250"}, want: 250},
		{name: "Off", args: []string{"--gc-percent", "-1"}, want: -1},
		{name: "EnvWins", args: []string{"--gc-percent", "250"}, env: "50", want: 100},
		{name: "EmptyEnvIsUnset", args: []string{"--gc-percent", "250"}, env: "", want: 250},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.env)
			got, err := apply(c.args...)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	t.Run("Refused", func(t *testing.T) {
		_, err := apply("--gc-percent", "-7")
		require.EqualError(t, err, "--gc-percent -7: want a percentage, or -1 to turn the collector off")
	})
}

func TestMemoryLimitFlag(t *testing.T) {
	// Not parallel: the memory limit and the environment are global.
	t.Setenv("GOMEMLIMIT", "")
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const none = math.MaxInt64
	apply := func(args ...string) (int64, error) {
		var err error
		app := &cli.App{Flags: devFlags(), Action: func(c *cli.Context) error {
			err = setMemoryLimit(c, zerolog.Nop())
			return nil
		}}
		debug.SetMemoryLimit(none)
		require.NoError(t, app.Run(append([]string{"harvestd"}, args...)))
		return debug.SetMemoryLimit(-1), err
	}
	for _, c := range []struct {
		name string
		args []string
		env  string
		want int64
	}{
		{name: "DefaultIsNone", want: none},
		{name: "Bytes", args: []string{"--memory-limit", "1073741824"}, want: 1 << 30},
		{name: "MiB", args: []string{"--memory-limit", "1536MiB"}, want: 1536 << 20},
		{name: "GiB", args: []string{"--memory-limit", "2GiB"}, want: 2 << 30},
		{name: "ZeroIsNone", args: []string{"--memory-limit", "0"}, want: none},
		{name: "EnvWins", args: []string{"--memory-limit", "2GiB"}, env: "1GiB", want: none},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", c.env)
			got, err := apply(c.args...)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	for _, v := range []string{"-1", "2GB", "1.5GiB", "lots", "9999999TiB"} {
		t.Run("Refused"+v, func(t *testing.T) {
			_, err := apply("--memory-limit", v)
			require.EqualError(t, err, "--memory-limit \""+v+"\": want a size such as 1536MiB or 2GiB (B, KiB, MiB, GiB, TiB), or 0 for none")
		})
	}
}

func TestLimitFlags(t *testing.T) {
	// Not parallel: urfave/cli's help flag is a shared global.
	parse := func(args ...string) (node.Config, error) {
		var cfg node.Config
		var err error
		app := &cli.App{Flags: devFlags(), Action: func(c *cli.Context) error {
			cfg, err = nodeConfig(c)
			return nil
		}}
		require.NoError(t, app.Run(append([]string{"harvestd"}, args...)))
		return cfg, err
	}
	t.Run("Defaults", func(t *testing.T) {
		cfg, err := parse()
		require.NoError(t, err)
		require.Equal(t, api.Limits{MaxInFlight: api.MaxInFlightDefault, MaxLongLived: api.MaxLongLivedDefault,
			MaxLongLivedPerToken: api.MaxLongLivedPerTokenDefault, StreamMemory: api.StreamMemoryDefault}, cfg.Limits)
	})
	t.Run("Set", func(t *testing.T) {
		cfg, err := parse("--rate-limit", "20", "--rate-burst", "40", "--max-in-flight", "64", "--max-long-polls", "128",
			"--max-long-polls-per-token", "8", "--stream-memory", "16777216")
		require.NoError(t, err)
		require.Equal(t, api.Limits{Rate: 20, Burst: 40, MaxInFlight: 64, MaxLongLived: 128, MaxLongLivedPerToken: 8,
			StreamMemory: 16 << 20}, cfg.Limits)
	})
	for _, args := range [][]string{{"--rate-limit", "-1"}, {"--rate-burst", "-1"}, {"--max-in-flight", "0"}, {"--max-long-polls", "-5"},
		{"--max-long-polls-per-token", "0"}, {"--max-long-polls-per-token", "-1"},
		{"--stream-memory", "0"}, {"--stream-memory", "1048576"}, {"--stream-memory", "-1"}} {
		t.Run("Refused"+strings.Join(args, ""), func(t *testing.T) {
			_, err := parse(args...)
			require.Error(t, err)
		})
	}
}

func TestTLSFlags(t *testing.T) {
	// Not parallel: urfave/cli's help flag is a shared global.
	parse := func(args ...string) (node.Config, error) {
		var cfg node.Config
		var err error
		app := &cli.App{Flags: devFlags(), Action: func(c *cli.Context) error {
			cfg, err = nodeConfig(c)
			return nil
		}}
		require.NoError(t, app.Run(append([]string{"harvestd"}, args...)))
		return cfg, err
	}
	cfg, err := parse()
	require.NoError(t, err)
	require.Nil(t, cfg.TLS, "no TLS by default")
	cfg, err = parse("--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-ca", "ca.pem")
	require.NoError(t, err)
	require.Equal(t, &tlsconf.Files{CertFile: "c.pem", KeyFile: "k.pem", CAFile: "ca.pem"}, cfg.TLS)
	_, err = parse("--tls-ca", "ca.pem")
	require.ErrorContains(t, err, "--tls-cert and --tls-key go together")
}
