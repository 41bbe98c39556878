package server

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

func TestImpliedCommand(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string // nil: a usage error
	}{
		{"NothingPrintsHelp", []string{"h"}, []string{"h"}},
		{"JoinSelectsAgent", []string{"h", "--join", "a:1"}, []string{"h", "agent", "--join", "a:1"}},
		{"JoinWithEquals", []string{"h", "--node-id", "n1", "--join=a:1,b:2"}, []string{"h", "agent", "--node-id", "n1", "--join=a:1,b:2"}},
		{"SingleDashJoin", []string{"h", "-join", "a:1"}, []string{"h", "agent", "-join", "a:1"}},
		{"AgentUnchanged", []string{"h", "agent", "--join", "a:1"}, []string{"h", "agent", "--join", "a:1"}},
		{"DevUnchanged", []string{"h", "dev", "--join", "a:1"}, []string{"h", "dev", "--join", "a:1"}},
		{"HelpUnchanged", []string{"h", "--help"}, []string{"h", "--help"}},
		{"VersionUnchanged", []string{"h", "-v"}, []string{"h", "-v"}},
		{"AgentFlagWithoutJoin", []string{"h", "--shard", "0=postgres://x"}, nil},
		{"JoinAfterDoubleDash", []string{"h", "--node-id", "n1", "--", "--join"}, nil},
		{"JoinAsAValueOnly", []string{"h", "--node-id", "join"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := impliedCommand(tc.args, "h")
			if tc.want == nil {
				require.ErrorContains(t, err, "h --join HOST:PORT")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestJoinShortForm(t *testing.T) {
	reg := harvest.NewRegistry()
	t.Run("HelpShowsIt", func(t *testing.T) {
		var out bytes.Buffer
		c := (&app{reg: reg, opts: newOptions([]Option{WithName("payoutd")})}).cli()
		c.Writer = &out
		require.NoError(t, c.Run([]string{"payoutd", "--help"}))
		require.Contains(t, out.String(), "payoutd --join HOST:PORT [agent options]")
	})
	t.Run("RunsTheAgent", func(t *testing.T) {
		// The agent's own check answers: the short form reached it.
		err := Run(context.Background(), []string{"payoutd", "--join", "127.0.0.1:1"}, reg, WithName("payoutd"))
		require.ErrorContains(t, err, "--shard is required")
	})
	t.Run("EnvironmentAloneDoesNot", func(t *testing.T) {
		t.Setenv("HARVEST_JOIN", "127.0.0.1:1")
		err := Run(context.Background(), []string{"payoutd", "--node-id", "n1"}, reg, WithName("payoutd"))
		require.ErrorContains(t, err, "--node-id comes after a command")
	})
}
