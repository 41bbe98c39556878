package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// gate is an activity whose attempts block until the test lets one pass.
type gate struct {
	entered chan string   // activity ids, as attempts start
	pass    chan struct{} // one token lets one attempt return
	calls   atomic.Int32
}

func newGate() *gate {
	return &gate{entered: make(chan string, 64), pass: make(chan struct{}, 64)}
}

func (g *gate) activity() *harvest.Activity[string, string] {
	return harvest.NewActivity("gated", func(ctx *harvest.ActivityContext, in string) (string, error) {
		g.calls.Add(1)
		g.entered <- ctx.Info().ActivityID
		select {
		case <-g.pass:
			return in, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

// waitEntered waits for the next attempt to start.
func (g *gate) waitEntered(t *testing.T) string {
	t.Helper()
	select {
	case id := <-g.entered:
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("no activity attempt started")
		return ""
	}
}

// register adds the gated activity and workflows that call it once
// ("gated_once"), twice in a row ("gated_twice") and without waiting
// ("fire_and_forget").
func (g *gate) register(t *testing.T, b *testBundle) {
	act := g.activity()
	require.NoError(t, b.reg.Register(act,
		harvest.NewWorkflow("gated_once", func(ctx harvest.Context, in string) (string, error) {
			return act.Execute(ctx, in).Get(ctx)
		}),
		harvest.NewWorkflow("gated_twice", func(ctx harvest.Context, in string) (string, error) {
			if _, err := act.Execute(ctx, in).Get(ctx); err != nil {
				return "", err
			}
			return act.Execute(ctx, in).Get(ctx)
		}),
		harvest.NewWorkflow("fire_and_forget", func(ctx harvest.Context, in string) (string, error) {
			act.Execute(ctx, in) // never awaited: the run closes in the same task
			return in, nil
		}),
	))
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

	t.Run("StartInsertsTheFirstTaskClaimed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate()
		g.register(t, b)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "gated_once", IdempotencyKey: "direct", Input: raw(t, "x")})
		g.waitEntered(t)
		task := readTask(t, b, res.ExecutionID)
		require.Equal(t, "running", task.status)
		require.Equal(t, 1, task.attempt)
		require.NotNil(t, task.epoch)
		require.Equal(t, e.Epoch(), *task.epoch)
		require.True(t, task.lockedUntil)
		require.Equal(t, readRun(t, b.pool, res.ExecutionID).claimXmin, task.xmin,
			"the start's transaction inserted the task claimed; no claim updated it")

		g.pass <- struct{}{}
		x := waitClosed(t, e, res.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.EqualValues(t, 1, g.calls.Load())
	})

	t.Run("CompletionBatchInsertsTheNextTaskClaimed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate()
		g.register(t, b)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "gated_twice", IdempotencyKey: "next", Input: raw(t, "x")})
		g.waitEntered(t)
		g.pass <- struct{}{}
		g.waitEntered(t) // the second attempt runs: its task was scheduled by the completion batch
		task := readTask(t, b, res.ExecutionID)
		require.Equal(t, "running", task.status)
		require.Equal(t, 1, task.attempt)
		xmins := eventXmins(t, b.pool, res.ExecutionID)
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "ActivityScheduled"},
			eventTypes(t, b.pool, res.ExecutionID))
		require.Equal(t, xmins[2], task.xmin, "the completion's transaction inserted the next task claimed")

		g.pass <- struct{}{}
		require.Equal(t, StateCompleted, waitClosed(t, e, res.ExecutionID).State)
		require.EqualValues(t, 2, g.calls.Load())
	})

	t.Run("ReservedSlotsAreLeftToTheLoop", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate()
		g.register(t, b)
		// Four workers, one kept for the loop: three runs take a slot each
		// directly; the fourth's task waits in the table for the loop.
		e := b.engine(t, func(c *Config) { c.ActivityWorkers = 4 })
		var runs []StartResult
		for i := range 3 {
			runs = append(runs, start(t, e, StartRequest{WorkflowName: "gated_once", IdempotencyKey: fmt.Sprint("held-", i), Input: raw(t, "x")}))
			g.waitEntered(t)
			task := readTask(t, b, runs[i].ExecutionID)
			require.Equal(t, readRun(t, b.pool, runs[i].ExecutionID).claimXmin, task.xmin, "run %d was dispatched directly", i)
		}
		last := start(t, e, StartRequest{WorkflowName: "gated_once", IdempotencyKey: "last", Input: raw(t, "x")})
		g.waitEntered(t)
		task := readTask(t, b, last.ExecutionID)
		require.Equal(t, "running", task.status)
		require.Equal(t, 1, task.attempt)
		require.NotEqual(t, readRun(t, b.pool, last.ExecutionID).claimXmin, task.xmin, "the loop's claim updated the task")
		for range 4 {
			g.pass <- struct{}{}
		}
		for _, r := range append(runs, last) {
			require.Equal(t, StateCompleted, waitClosed(t, e, r.ExecutionID).State)
		}
	})

	t.Run("TaskClaimedBeyondTheSlotsIsHandedBack", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate()
		g.register(t, b)
		e := b.engine(t, func(c *Config) { c.ActivityWorkers = 1 })
		require.Equal(t, 1, e.act.TakeSlots(1), "the test holds the only slot: nobody claims")
		res := start(t, e, StartRequest{WorkflowName: "gated_once", IdempotencyKey: "back", Input: raw(t, "x")})
		require.Equal(t, "pending", readTask(t, b, res.ExecutionID).status)

		claimed, err := e.act.Claim(ctxT(t), 1, false)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Equal(t, 1, claimed[0].Attempt)
		e.act.Unclaim(ctxT(t), claimed)
		task := readTask(t, b, res.ExecutionID)
		require.Equal(t, "pending", task.status)
		require.Zero(t, task.attempt, "the handed-back claim is undone")
		require.Nil(t, task.epoch)
		require.False(t, task.lockedUntil)

		e.act.ReleaseSlot()
		g.waitEntered(t)
		require.Equal(t, 1, readTask(t, b, res.ExecutionID).attempt, "the next claim is attempt 1 again")
		g.pass <- struct{}{}
		require.Equal(t, StateCompleted, waitClosed(t, e, res.ExecutionID).State)
	})

	t.Run("TaskOfARunClosedInTheSameBatchIsNotRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := newGate()
		g.register(t, b)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "fire_and_forget", IdempotencyKey: "ff", Input: raw(t, "x")})
		require.Equal(t, StateCompleted, res.State)
		// A dispatched attempt would hold its slot until the gate passes
		// it; a start's tasks are settled before the start is answered.
		require.Zero(t, e.act.BusySlots(), "no slot is held")
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "WorkflowCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
		var tasks int
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_tasks WHERE execution_id = $1`,
			res.ExecutionID).Scan(&tasks))
		require.Zero(t, tasks)
		require.Zero(t, g.calls.Load())
	})

	t.Run("ConcurrencyStaysWithinTheSlots", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var running, peak, calls atomic.Int32
		act := harvest.NewActivity("counted", func(ctx *harvest.ActivityContext, in string) (string, error) {
			calls.Add(1)
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond) // the activity's work: overlap is what is measured
			return in, nil
		})
		require.NoError(t, b.reg.Register(act, harvest.NewWorkflow("counted_twice", func(ctx harvest.Context, in string) (string, error) {
			if _, err := act.Execute(ctx, in).Get(ctx); err != nil {
				return "", err
			}
			return act.Execute(ctx, in).Get(ctx)
		})))
		const workers, runs = 4, 40
		e := b.engine(t, func(c *Config) { c.ActivityWorkers = workers })
		ids := make(chan uuid.UUID, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := e.StartWorkflow(ctxT(t), StartRequest{WorkflowName: "counted_twice", IdempotencyKey: fmt.Sprint("c-", i), Input: raw(t, "x")})
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
		require.EqualValues(t, 2*runs, calls.Load(), "each activity ran once")
		require.LessOrEqual(t, peak.Load(), int32(workers), "never more attempts than slots")
		eventually(t, "every activity slot to be free", func() bool { return e.act.BusySlots() == 0 })
	})
}
