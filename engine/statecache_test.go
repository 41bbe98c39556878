package engine

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/internal/wftask"
	"github.com/harvestd/harvest/internal/testworkflows"
)

// chainSteps is the number of activities chainWF runs.
const chainSteps = 12

// chainWF runs chainSteps "record" activities, sleeping a millisecond
// after every third and waiting for a "go" signal after the third, while a
// coroutine counts "item" signals; it returns the activities' outputs and
// the count.
var chainWF = harvest.NewWorkflow("chain", func(ctx harvest.Context, _ string) ([]string, error) {
	var out []string
	items := 0
	harvest.Go(ctx, func(ctx harvest.Context) {
		for {
			if _, err := itemSig.Receive(ctx); err != nil {
				return
			}
			items++
		}
	})
	for i := range chainSteps {
		v, err := harvest.NewActivity[string, string]("record", nil).Execute(ctx, "step").Get(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if i == 2 {
			if _, err := goSignal.Receive(ctx); err != nil {
				return nil, err
			}
		}
		if i%3 == 0 {
			if err := harvest.Sleep(ctx, time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	return append(out, strings.Repeat("i", items)), nil
})

// normalEvents is the run's history without what differs between runs of
// the same code (the execution id, times): what cached and replayed
// execution must agree on.
func normalEvents(t *testing.T, b *testBundle, id uuid.UUID) []string {
	t.Helper()
	events, err := wftask.LoadHistory(ctxT(t), b.pool, &store.Exec{ID: id}, 0, -1)
	require.NoError(t, err)
	varying := regexp.MustCompile(`"fire_at": ?"[^"]*"|hvk_[0-9a-f]+`)
	out := make([]string, len(events))
	for i, ev := range events {
		data := strings.ReplaceAll(string(ev.Data), id.String(), "ID")
		out[i] = string(ev.Type) + " " + varying.ReplaceAllString(data, "")
	}
	return out
}

// runChain runs chainWF to its end on e, sending an item and a go signal
// once the third activity completed; during, if set, runs whenever the
// history grew.
func runChain(t *testing.T, b *testBundle, e *Engine, during func(events int)) uuid.UUID {
	t.Helper()
	id := start(t, e, StartRequest{WorkflowName: "chain", WorkflowID: "chain-1"}).ExecutionID
	eventually(t, "the third activity", func() bool {
		return count(eventTypes(t, b.pool, id), harvest.EventActivityCompleted) >= 3
	})
	for _, name := range []string{"item", "go"} {
		_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: name, Payload: raw(t, "x")})
		require.NoError(t, err)
	}
	for seen := 0; ; {
		x, err := e.GetExecution(ctxT(t), id)
		require.NoError(t, err)
		if IsTerminal(x.State) {
			break
		}
		if n := int(x.EventCount); n > seen && during != nil {
			seen = n
			during(n)
		}
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, StateCompleted, waitClosed(t, e, id).State)
	return id
}

func chainSetup(t *testing.T) *testBundle {
	t.Helper()
	b := setup(t)
	require.NoError(t, b.reg.Register(chainWF))
	return b
}

func TestStateCache(t *testing.T) {
	t.Parallel()
	cacheOff := func(c *Config) { c.StateCacheEntries = -1 }

	t.Run("CachedAndReplayedExecutionAgree", func(t *testing.T) {
		t.Parallel()
		off := chainSetup(t)
		eOff := off.engine(t, cacheOff)
		want := normalEvents(t, off, runChain(t, off, eOff, nil))
		require.Zero(t, eOff.StateCacheStats().Hits, "the cache is off")

		on := chainSetup(t)
		eOn := on.engine(t)
		id := runChain(t, on, eOn, nil)
		require.Equal(t, want, normalEvents(t, on, id))
		st := eOn.StateCacheStats()
		require.Positive(t, st.Hits, "tasks ran on cached state")
		require.Zero(t, st.Rebuilds)
		require.Zero(t, st.Entries, "the closed run is not cached")
		history, err := wftask.LoadHistory(ctxT(t), on.pool, &store.Exec{ID: id}, 0, -1)
		require.NoError(t, err)
		info := harvest.WorkflowInfo{ExecutionID: id.String(), WorkflowName: "chain", WorkflowID: "chain-1"}
		require.NoError(t, testworkflows.ReplayAgrees(ctxT(t), on.reg, info, history), "every task's commands are what a replay issues")

		evicted := chainSetup(t)
		eEv := evicted.engine(t)
		id = runChain(t, evicted, eEv, func(int) { eEv.wf.Purge() })
		require.Equal(t, want, normalEvents(t, evicted, id), "evicted mid-run, rebuilt by replay")
	})

	t.Run("DroppedOnTerminateAndLeaseLoss", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		cached := func(id uuid.UUID) bool { _, ok := e.wf.CachedNext(id); return ok }
		startCached := func() uuid.UUID {
			id := start(t, e, StartRequest{WorkflowName: "collect"}).ExecutionID
			_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "item", Payload: raw(t, "a")})
			require.NoError(t, err)
			eventually(t, "the run cached", func() bool { return cached(id) })
			return id
		}
		id := startCached()
		_, err := e.Terminate(ctxT(t), id, "test")
		require.NoError(t, err)
		require.False(t, cached(id), "a terminated run is dropped")

		id = startCached()
		_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "item", Payload: raw(t, "stop")})
		require.NoError(t, err)
		waitClosed(t, e, id)
		require.False(t, cached(id), "a completed run is dropped")

		startCached()
		e.Stop()
		require.Zero(t, e.StateCacheStats().Entries, "stopping drops every run")
	})

	t.Run("FailedTransactionDropsState", func(t *testing.T) {
		t.Parallel()
		b := chainSetup(t)
		var failed atomic.Bool
		var e *Engine
		e = b.engine(t, func(c *Config) {
			c.crashHook = func(_ context.Context, p loop.CrashPoint) error {
				// The first commit of a task that ran on cached state fails.
				if p == crashBeforeCommit && e != nil && e.wf.CacheStats().Hits > 0 && failed.CompareAndSwap(false, true) {
					return errors.New("commit lost")
				}
				return nil
			}
		})
		runChain(t, b, e, nil)
		require.True(t, failed.Load())
		require.Zero(t, e.StateCacheStats().Rebuilds, "the state ahead of the database was dropped, never used")
	})

	t.Run("FailedTaskDropsState", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		boom := harvest.NewWorkflow("boom_on_item", func(ctx harvest.Context, _ string) (string, error) {
			if _, err := itemSig.Receive(ctx); err != nil {
				return "", err
			}
			v, err := itemSig.Receive(ctx)
			if v == "boom" {
				panic("boom")
			}
			return v, err
		})
		require.NoError(t, b.reg.Register(boom))
		e := b.engine(t)
		id := start(t, e, StartRequest{WorkflowName: "boom_on_item"}).ExecutionID
		signal := func(v string) {
			_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "item", Payload: raw(t, v)})
			require.NoError(t, err)
		}
		signal("a")
		eventually(t, "the run cached", func() bool { _, ok := e.wf.CachedNext(id); return ok })
		signal("boom")
		eventually(t, "the task's retry failed too", func() bool {
			x, err := e.GetExecution(ctxT(t), id)
			require.NoError(t, err)
			return x.TaskAttempt >= 2
		})
		// The failing step on cached state is rebuilt (and fails) once; the
		// retry finds no cached state, so it rebuilds nothing.
		require.Equal(t, int64(1), e.StateCacheStats().Rebuilds)
	})
}

// TestStateCacheAcrossContinueAsNew runs a counter chain (three runs)
// with the cache on and off: the same result, and in every run of the
// cached chain each task's commands are what a replay issues.
func TestStateCacheAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	chain := func(t *testing.T, mutate func(*Config)) (*testBundle, *Engine, []uuid.UUID, json.RawMessage) {
		b := setup(t)
		e := b.engine(t, mutate)
		first := start(t, e, StartRequest{WorkflowName: demo.CounterName, WorkflowID: "counter-1",
			Input: raw(t, demo.CounterInput{Every: 3, Until: 7})}).ExecutionID
		for i := range 7 {
			_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: first, SignalName: demo.CounterAddSignal,
				Payload: raw(t, demo.CounterAdd{ID: strconv.Itoa(i), N: i})})
			require.NoError(t, err)
		}
		o, err := e.Result(ctxT(t), first, 20*time.Second) // follows the chain
		require.NoError(t, err)
		require.Equal(t, StateCompleted, o.State)
		runs := []uuid.UUID{first}
		for {
			x, err := e.GetExecution(ctxT(t), runs[len(runs)-1])
			require.NoError(t, err)
			if x.ContinuedTo == nil {
				return b, e, runs, x.Output
			}
			runs = append(runs, *x.ContinuedTo)
		}
	}
	_, _, offRuns, want := chain(t, func(c *Config) { c.StateCacheEntries = -1 })
	b, e, runs, got := chain(t, func(*Config) {})
	require.JSONEq(t, string(want), string(got))
	require.Len(t, runs, len(offRuns))
	require.Len(t, runs, 3)
	require.Positive(t, e.StateCacheStats().Hits)
	for _, id := range runs {
		history, err := wftask.LoadHistory(ctxT(t), b.pool, &store.Exec{ID: id}, 0, -1)
		require.NoError(t, err)
		info := harvest.WorkflowInfo{ExecutionID: id.String(), WorkflowName: demo.CounterName, WorkflowID: "counter-1"}
		require.NoError(t, testworkflows.ReplayAgrees(ctxT(t), b.reg, info, history), "run %s", id)
	}
}
