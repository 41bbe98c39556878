package engine

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// lineInput is one activity of the priority tests: a name and the
// priority it is scheduled with.
type lineInput struct {
	Name     string `json:"name"`
	Priority int    `json:"priority"`
}

// ranOrder records the order the activities ran in.
type ranOrder struct {
	mu  sync.Mutex
	ran []lineInput
}

func (o *ranOrder) add(in lineInput) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ran = append(o.ran, in)
}

func (o *ranOrder) priorities() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]int, len(o.ran))
	for i, in := range o.ran {
		out[i] = cmpPriority(in.Priority)
	}
	return out
}

// cmpPriority is the priority a task runs with (0 is the default).
func cmpPriority(p int) int {
	if p == 0 {
		return harvest.PriorityDefault
	}
	return p
}

// setupPriorities registers step (records its input in o, limited when
// limited) and lines (a workflow that schedules its input's activities at
// once, each with its priority, and waits for all), and makes an engine
// with one activity worker, so that the tasks wait and are claimed one at
// a time.
func setupPriorities(t *testing.T, o *ranOrder, limited bool) *Engine {
	t.Helper()
	b := setup(t)
	step := harvest.NewActivity("step", func(_ *harvest.ActivityContext, in lineInput) (string, error) {
		o.add(in)
		return in.Name, nil
	})
	if limited {
		step = step.WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1})
	}
	lines := harvest.NewWorkflow("lines", func(ctx harvest.Context, in []lineInput) (int, error) {
		var fs []harvest.Future[string]
		for _, l := range in {
			fs = append(fs, step.Execute(ctx, l, harvest.ActivityOptions{Priority: l.Priority}))
		}
		for _, f := range fs {
			if _, err := f.Get(ctx); err != nil {
				return 0, err
			}
		}
		return len(fs), nil
	})
	require.NoError(t, b.reg.Register(step, lines))
	return b.engine(t, func(c *Config) { c.ActivityWorkers = 1 })
}

// mixedLines are activities scheduled lowest priority first.
func mixedLines() []lineInput {
	prios := []int{harvest.PriorityLowest, 4, 0, 2, harvest.PriorityHighest}
	var in []lineInput
	for round := range 3 {
		for _, p := range prios {
			in = append(in, lineInput{Name: fmt.Sprintf("r%d-p%d", round, p), Priority: p})
		}
	}
	return in
}

func TestActivityPriority(t *testing.T) {
	t.Parallel()

	for _, limited := range []bool{false, true} {
		t.Run(fmt.Sprintf("WaitingTasksRunHighestFirst/limited=%v", limited), func(t *testing.T) {
			t.Parallel()
			o := &ranOrder{}
			e := setupPriorities(t, o, limited)
			in := mixedLines()
			res := start(t, e, StartRequest{WorkflowName: "lines", Input: raw(t, in)})
			x := waitClosed(t, e, res.ExecutionID)
			require.Equal(t, StateCompleted, x.State, string(x.Error))
			got := o.priorities()
			require.Len(t, got, len(in))
			require.IsNonDecreasing(t, got, "scheduled lowest first, run highest first: %v", o.ran)
		})
	}

	t.Run("APriorityOutOfRangeFailsTheCall", func(t *testing.T) {
		t.Parallel()
		o := &ranOrder{}
		e := setupPriorities(t, o, false)
		res := start(t, e, StartRequest{WorkflowName: "lines", Input: raw(t, []lineInput{{Name: "x", Priority: 9}})})
		x := waitClosed(t, e, res.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Contains(t, string(x.Error), "priority 9 is out of range")
		require.Empty(t, o.ran)
	})

	t.Run("ADefaultOutOfRangeIsRefusedAtRegistration", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bad := harvest.NewActivity("bad", func(*harvest.ActivityContext, int) (int, error) { return 0, nil },
			harvest.ActivityOptions{StartToClose: time.Second, Priority: -1})
		require.ErrorContains(t, b.reg.Register(bad), "priority -1 is out of range")
	})
}
