package limits

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

func TestSet(t *testing.T) {
	t.Parallel()
	wf := func(harvest.Context, string) (string, error) { return "", nil }
	act := func(*harvest.ActivityContext, string) (string, error) { return "", nil }
	reg := harvest.NewRegistry()
	require.NoError(t, reg.Register(
		harvest.NewWorkflow("declared", wf).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 2}),
		harvest.NewWorkflow("lifted", wf).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1}),
		harvest.NewWorkflow("plain", wf),
		harvest.NewActivity("paced", act).WithRateLimit(harvest.RateLimit{PerSecond: 5}),
	))
	rt := Runtime{
		Workflows:  map[string]harvest.ConcurrencyLimit{"lifted": {}, "plain": {MaxRunning: 3, KeyPointer: "/k"}},
		Activities: map[string]harvest.ConcurrencyLimit{"act": {MaxRunning: 1}},
		Rates:      map[string]harvest.RateLimit{"paced": {PerSecond: 9, Burst: 2}},
	}
	s := New(reg, func() Runtime { return rt })
	for _, c := range []struct {
		name string
		want harvest.ConcurrencyLimit
	}{
		{"declared", harvest.ConcurrencyLimit{MaxRunning: 2}},
		{"lifted", harvest.ConcurrencyLimit{}},
		{"plain", harvest.ConcurrencyLimit{MaxRunning: 3, KeyPointer: "/k"}},
		{"unknown", harvest.ConcurrencyLimit{}},
	} {
		t.Run("Workflow"+c.name, func(t *testing.T) { require.Equal(t, c.want, s.Workflow(c.name)) })
	}
	require.Equal(t, map[string]harvest.ConcurrencyLimit{"declared": {MaxRunning: 2}, "plain": {MaxRunning: 3, KeyPointer: "/k"}}, s.Workflows())
	require.Equal(t, map[string]harvest.ConcurrencyLimit{"act": {MaxRunning: 1}}, s.Activities())
	require.Equal(t, map[string]harvest.RateLimit{"paced": {PerSecond: 9, Burst: 2}}, s.Rates())
	require.True(t, s.AnyWorkflow())
	require.True(t, s.AnyActivity())

	none := New(harvest.NewRegistry(), nil)
	require.False(t, none.AnyWorkflow())
	require.False(t, none.AnyActivity())
	require.Empty(t, none.Workflows())
}
