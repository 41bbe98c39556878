package demo_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/harvesttest"
)

// The counter continues as new every Every signals; signals sent (and
// retried) to the first run's id land once each on the chain's current
// run, and the chain ends after Until of them, one run per Every.
func TestCounter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		every, until, runs int
	}{{every: 3, until: 7, runs: 3}, {every: 2, until: 4, runs: 2}, {every: 0, until: 12, runs: 2}, {every: 5, until: 0, runs: 1}} {
		t.Run(fmt.Sprintf("Every%dUntil%d", tc.every, tc.until), func(t *testing.T) {
			t.Parallel()
			env, _ := setup(t)
			run := env.Start(demo.CounterName, demo.CounterInput{Every: tc.every, Until: tc.until})
			var want []string
			for i := range tc.until {
				id := fmt.Sprint("s", i)
				want = append(want, id)
				for range 2 { // a delivery and its retry
					env.Signal(run.ExecutionID, demo.CounterAddSignal, demo.CounterAdd{ID: id, N: i}, harvesttest.WithSignalKey(id))
				}
			}
			var out demo.CounterResult
			env.Output(run.ExecutionID, &out)
			require.Equal(t, tc.until, out.Count)
			require.Equal(t, tc.until*(tc.until-1)/2, out.Sum)
			require.Equal(t, tc.runs, out.Runs)
			if tc.until > 0 {
				require.Equal(t, want, out.IDs)
			}
		})
	}
}
