package server

import (
	"bytes"
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// flagNames lists every flag name of every command of a.
func flagNames(a *app) map[string][]string {
	out := map[string][]string{}
	for _, cmd := range a.cli().Commands {
		for _, f := range cmd.Flags {
			out[cmd.Name] = append(out[cmd.Name], f.Names()...)
		}
		sort.Strings(out[cmd.Name])
	}
	return out
}

func TestRun(t *testing.T) {
	reg := harvest.NewRegistry()
	t.Run("AnyNameGetsEveryFlag", func(t *testing.T) {
		harvestd := flagNames(&app{reg: reg, opts: newOptions(nil)})
		payoutd := flagNames(&app{reg: reg, opts: newOptions([]Option{WithName("payoutd"), WithVersion("1.4.0")})})
		require.Equal(t, harvestd, payoutd)
		require.Contains(t, harvestd["agent"], "cluster-key-file")
		require.Contains(t, harvestd["dev"], "auth")
	})
	t.Run("HelpNamesTheBinary", func(t *testing.T) {
		var out bytes.Buffer
		a := &app{reg: reg, opts: newOptions([]Option{WithName("payoutd")})}
		c := a.cli()
		c.Writer = &out
		require.NoError(t, c.Run([]string{"payoutd", "agent", "--help"}))
		require.Contains(t, out.String(), "payoutd agent --shard ID=DSN")
	})
	t.Run("VersionFlag", func(t *testing.T) {
		var out bytes.Buffer
		a := &app{reg: reg, opts: newOptions([]Option{WithName("payoutd"), WithVersion("1.4.0")})}
		c := a.cli()
		c.Writer = &out
		require.NoError(t, c.Run([]string{"payoutd", "--version"}))
		require.Contains(t, out.String(), "1.4.0")
	})
	t.Run("ErrorsComeBack", func(t *testing.T) {
		err := Run(context.Background(), []string{"payoutd", "agent"}, reg, WithName("payoutd"))
		require.ErrorContains(t, err, "--shard is required")
	})
	t.Run("NoRegistry", func(t *testing.T) {
		require.Error(t, Run(context.Background(), []string{"x"}, nil))
	})
}
