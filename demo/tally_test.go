package demo_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// A tally counts the items of the list a batch start's run gets; a null
// input (a batch of one null input is [null]; no input at all is null)
// counts none.
func TestTally(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	for _, tc := range []struct {
		in   any
		want int
	}{{[]any{map[string]any{"token": "a"}, 2, nil}, 3}, {[]any{}, 0}, {nil, 0}} {
		run := env.Start(demo.TallyName, tc.in)
		var out int
		env.Output(run.ExecutionID, &out)
		require.Equal(t, tc.want, out, "input %v", tc.in)
	}
	run := env.Start(demo.TallyName, json.RawMessage(`[{"token":"x"}]`))
	var out int
	env.Output(run.ExecutionID, &out)
	require.Equal(t, 1, out)
}
