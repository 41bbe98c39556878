package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/node"
)

func TestSplitShardEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
	}{
		{"OnePerFlag", []string{"0=postgres://h/a", "1=postgres://h/b"}, []string{"0=postgres://h/a", "1=postgres://h/b"}},
		{"CommaList", []string{"0=postgres://h/a, 1=postgres://h/b,"}, []string{"0=postgres://h/a", "1=postgres://h/b"}},
		{"CommasInsideADSN", []string{"0=postgres://u:p,w@h1:5432,h2:5433/a,1=host=h1,h2 port=5432,5433 dbname=b"},
			[]string{"0=postgres://u:p,w@h1:5432,h2:5433/a", "1=host=h1,h2 port=5432,5433 dbname=b"}},
		{"KeywordDSN", []string{"7=host=/tmp dbname='x'"}, []string{"7=host=/tmp dbname='x'"}},
		{"NoIDStaysOneEntry", []string{"postgres://h/a?sslmode=disable"}, []string{"postgres://h/a?sslmode=disable"}},
		{"Empty", []string{"", " , "}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, splitShardEntries(tc.values))
		})
	}
}

func TestParseShards(t *testing.T) {
	t.Parallel()
	got, err := parseShards([]string{"0=postgres://h/a,1=postgres://h/b", " 65534 = host=/tmp "})
	require.NoError(t, err)
	require.Equal(t, map[uint16]string{0: "postgres://h/a", 1: "postgres://h/b", 65534: "host=/tmp"}, got)
}

func TestRaftConfig(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (*node.RaftConfig, error) {
		var rc *node.RaftConfig
		var err error
		app := &cli.App{Flags: raftFlags(), Action: func(c *cli.Context) error {
			rc, err = raftConfig(c)
			return nil
		}}
		require.NoError(t, app.Run(append([]string{"harvestd"}, args...)))
		return rc, err
	}

	rc, err := parse()
	require.NoError(t, err)
	require.Nil(t, rc, "no raft flag: static shards")

	rc, err = parse("--bootstrap-expect", "5", "--max-voters", "5", "--raft-addr", "0.0.0.0:8301", "--advertise-raft", "10.0.0.1:8301",
		"--drain-check-interval", "3s")
	require.NoError(t, err)
	require.Equal(t, &node.RaftConfig{BindAddr: "0.0.0.0:8301", AdvertiseAddr: "10.0.0.1:8301", BootstrapExpect: 5, MaxVoters: 5,
		DrainCheckInterval: 3 * time.Second}, rc)

	rc, err = parse("--raft-addr", "127.0.0.1:8300")
	require.NoError(t, err)
	require.Equal(t, &node.RaftConfig{BindAddr: "127.0.0.1:8300", MaxVoters: 3, DrainCheckInterval: node.DrainCheckIntervalDefault}, rc,
		"joins an existing cluster (bootstrap-expect 0)")
}

func TestParseJoin(t *testing.T) {
	t.Parallel()
	got, err := parseJoin([]string{"10.0.0.1:7946, seed.example:7946", "[::1]:7000", ""})
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.1:7946", "seed.example:7946", "[::1]:7000"}, got)
	for _, bad := range []string{"nohost", ":7946", "h:0", "h:x"} {
		_, err := parseJoin([]string{bad})
		require.ErrorContains(t, err, "--join", bad)
	}
}

// TestAgentFlagErrors: bad agent flags fail before anything starts, with
// exit status 1 and one line naming the flag.
