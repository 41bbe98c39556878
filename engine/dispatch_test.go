package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// gate is an activity that blocks until its test releases it.
type gate struct {
	entered chan string // activity ids, as attempts start
	release chan struct{}
	once    sync.Once
	calls   atomic.Int32
}

func newGate(t *testing.T) *gate {
	g := &gate{entered: make(chan string, 64), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) activity() *harvest.Activity[string, string] {
	return harvest.NewActivity("gated", func(ctx *harvest.ActivityContext, in string) (string, error) {
		g.calls.Add(1)
		g.entered <- ctx.Info().ActivityID
		select {
		case <-g.release:
			return in, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

// taskRow is what the tests read of an activity task.
type taskRow struct {
	status      string
	attempt     int
	epoch       *int64
	xmin        string
	lockedUntil bool
}

func readTask(t *testing.T, b *testBundle, id uuid.UUID) taskRow {
	t.Helper()
	var r taskRow
	require.NoError(t, b.pool.QueryRow(ctxT(t), `
		SELECT status, attempt, claim_epoch, xmin::text, locked_until IS NOT NULL
		  FROM harvest_tasks WHERE execution_id = $1`, id).
		Scan(&r.status, &r.attempt, &r.epoch, &r.xmin, &r.lockedUntil))
	return r
}

// New activity tasks take free activity slots in the batch that schedules
// them (direct dispatch): inserted claimed, run without a claim.
func TestDirectDispatch(t *testing.T) {
	t.Parallel()

	t.Run("TaskIsInsertedClaimedAndRunsAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate(t)
		act := g.activity()
		require.NoError(t, b.reg.Register(act, harvest.NewWorkflow("gated_once", func(ctx harvest.Context, in string) (string, error) {
			return act.Execute(ctx, in).Get(ctx)
		})))
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "gated_once", IdempotencyKey: "direct", Input: raw(t, "x")})
		<-g.entered
		task := readTask(t, b, res.ExecutionID)
		require.Equal(t, "running", task.status)
		require.Equal(t, 1, task.attempt)
		require.NotNil(t, task.epoch)
		require.Equal(t, e.Epoch(), *task.epoch)
		require.True(t, task.lockedUntil)
		require.Equal(t, readRun(t, b.pool, res.ExecutionID).claimXmin, task.xmin,
			"the start's transaction inserted the task claimed; no claim updated it")

		g.open()
		x := waitClosed(t, e, res.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.EqualValues(t, 1, g.calls.Load())
	})

	t.Run("ReservedSlotsAreLeftToTheLoop", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate(t)
		act := g.activity()
		require.NoError(t, b.reg.Register(act, harvest.NewWorkflow("gated_once", func(ctx harvest.Context, in string) (string, error) {
			return act.Execute(ctx, in).Get(ctx)
		})))
		// One worker: its slot is the loop's reserve, so the task waits
		// in the table and the loop claims it.
		e := b.engine(t, func(c *Config) { c.ActivityWorkers = 1 })
		res := start(t, e, StartRequest{WorkflowName: "gated_once", IdempotencyKey: "loop", Input: raw(t, "x")})
		<-g.entered
		task := readTask(t, b, res.ExecutionID)
		require.Equal(t, "running", task.status)
		require.Equal(t, 1, task.attempt)
		require.NotEqual(t, readRun(t, b.pool, res.ExecutionID).claimXmin, task.xmin, "the loop's claim updated the task")
		g.open()
		require.Equal(t, StateCompleted, waitClosed(t, e, res.ExecutionID).State)
	})

	t.Run("TaskOfARunClosedInTheSameBatchIsNotRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate(t)
		act := g.activity()
		require.NoError(t, b.reg.Register(act, harvest.NewWorkflow("fire_and_forget", func(ctx harvest.Context, in string) (string, error) {
			act.Execute(ctx, in) // never awaited: the run closes in the same task
			return in, nil
		})))
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "fire_and_forget", IdempotencyKey: "ff", Input: raw(t, "x")})
		require.Equal(t, StateCompleted, res.State)
		// A dispatched attempt would hold its slot until the gate opens;
		// settling happens before the start is answered.
		require.Zero(t, len(e.actSlots.ch), "no slot is held")
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "WorkflowCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
		var tasks int
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_tasks WHERE execution_id = $1`,
			res.ExecutionID).Scan(&tasks))
		require.Zero(t, tasks)
		require.Zero(t, g.calls.Load())
	})

	t.Run("SlotsAreAllReturned", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t, func(c *Config) { c.ActivityWorkers = 4 })
		const runs = 40
		ids := make(chan uuid.UUID, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := e.StartWorkflow(ctxT(t), StartRequest{WorkflowName: "two_calls", IdempotencyKey: fmt.Sprintf("slots-%d", i)})
				if err == nil {
					ids <- res.ExecutionID
				}
			}()
		}
		wg.Wait()
		close(ids)
		n := 0
		for id := range ids {
			require.Equal(t, StateCompleted, waitClosed(t, e, id).State)
			n++
		}
		require.Equal(t, runs, n)
		eventually(t, "every activity slot to be free", func() bool { return len(e.actSlots.ch) == 0 })
		require.Len(t, b.keys.get("record"), 2*runs, "each activity ran once")
	})
}
