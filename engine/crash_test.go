package engine

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
)

var errCrashed = errors.New("crashed at a crash point")

// crashScenario is a run that passes a crash point, the client calls it
// needs (repeated on the successor, so they must be idempotent) and how
// it ends without a crash.
type crashScenario struct {
	req    StartRequest
	act    func(e *Engine, id uuid.UUID, stop <-chan struct{})
	state  string
	output string
	// check, when set, checks more once the run closed.
	check func(t *testing.T, pool *pgxpool.Pool, id uuid.UUID)
}

func (b *testBundle) registerCrashWorkflows(t *testing.T) {
	record := harvest.NewActivity("crash_record", func(_ *harvest.ActivityContext, tag string) (string, error) { return tag, nil })
	require.NoError(t, b.reg.Register(record, harvest.NewWorkflow("crash_select", func(ctx harvest.Context, timeoutMS int) (string, error) {
		if _, err := record.Execute(ctx, "a").Get(ctx); err != nil {
			return "", err
		}
		cctx, cancel := harvest.WithCancel(ctx)
		won := ""
		harvest.NewSelector(ctx).
			AddReceive(goSignal, func() { won, _ = goSignal.Receive(ctx) }).
			AddFuture(harvest.NewTimer(cctx, time.Duration(timeoutMS)*time.Millisecond), func() { won = "timeout" }).
			Select(ctx)
		cancel()
		if _, err := record.Execute(ctx, "b").Get(ctx); err != nil {
			return "", err
		}
		return won, nil
	})))
	b.registerRefundOnCancel(t)
	b.registerOutboxWorkflows(t)
	require.NoError(t, b.reg.Register(outboxCrashWF, outboxByIDCrashWF, limitedCrashWF))
}

// limitedCrashWF is under a concurrency limit: its run starts QUEUED and
// passes the flow dispatcher before its code runs.
var limitedCrashWF = harvest.NewWorkflow("crash_limited", func(_ harvest.Context, in string) (string, error) {
	return in, nil
}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1})

// outboxCrashWF starts a collect child, signals it "a" and "stop" from
// the parent (two external signals) and returns the child's result: every
// outbox kind but the close policy passes through it.
var outboxCrashWF = harvest.NewWorkflow("outbox_crash", func(ctx harvest.Context, _ string) ([]string, error) {
	child := collectWF.Execute(ctx, "")
	started, err := child.Started(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range []string{"a", "stop"} {
		if _, err := harvest.SignalExternal(ctx, started.ExecutionID, itemSig, v).Get(ctx); err != nil {
			return nil, err
		}
	}
	return child.Get(ctx)
})

// outboxByIDCrashWF is outboxCrashWF with its signals sent to the
// child's workflow id (SignalExternalWorkflow): each is resolved once.
var outboxByIDCrashWF = harvest.NewWorkflow("outbox_by_id_crash", func(ctx harvest.Context, _ string) ([]string, error) {
	child := collectWF.Execute(ctx, "", harvest.ChildOptions{WorkflowID: ctx.Info().ExecutionID + "-collect"})
	started, err := child.Started(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range []string{"a", "stop"} {
		if _, err := harvest.SignalExternalWorkflow(ctx, collectWF.Name(), started.WorkflowID, itemSig, v).Get(ctx); err != nil {
			return nil, err
		}
	}
	return child.Get(ctx)
})

// outboxScenario runs outboxCrashWF: one child, each signal once.
func outboxScenario() crashScenario { return outboxScenarioOf("outbox_crash") }

// outboxScenarioOf runs workflow, outboxCrashWF or outboxByIDCrashWF.
func outboxScenarioOf(workflow string) crashScenario {
	return crashScenario{
		req: StartRequest{WorkflowName: workflow}, act: func(*Engine, uuid.UUID, <-chan struct{}) {},
		state: StateCompleted, output: `["a"]`,
		check: func(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) {
			children := childRuns(t, pool, id)
			require.Len(t, children, 1, "one child per child command")
			keys := signalKeys(t, pool, children[0])
			require.Equal(t, []string{harvest.ExternalSignalKey(id.String(), "2"), harvest.ExternalSignalKey(id.String(), "3")}, keys,
				"one signal per send")
			types := eventTypes(t, pool, id)
			for typ, n := range map[harvest.EventType]int{harvest.EventChildWorkflowInitiated: 1, harvest.EventSignalExternalInitiated: 2,
				harvest.EventExternalSignalDelivered: 2, harvest.EventSignalReceived: 1} {
				require.Equal(t, n, count(types, typ), "%s in %v", typ, types)
			}
			require.LessOrEqual(t, count(types, harvest.EventChildWorkflowStarted), 1)
			require.Equal(t, StateCompleted, waitOutcome(t, pool, children[0]))
			requireOutboxEmptyEventually(t, pool)
		},
	}
}

// waitOutcome is the state of a run once it closed.
func waitOutcome(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) string {
	t.Helper()
	var state string
	eventually(t, "the run's close", func() bool {
		_ = pool.QueryRow(context.Background(), `SELECT state FROM harvest_executions WHERE execution_id = $1`, id).Scan(&state)
		return IsTerminal(state)
	})
	return state
}

// crashScenarios maps each crash point to a run that passes it.
func crashScenarios(pool *pgxpool.Pool) map[loop.CrashPoint]crashScenario {
	signalled := crashScenario{
		req: StartRequest{WorkflowName: "crash_select", Input: []byte(`3600000`)},
		act: func(e *Engine, id uuid.UUID, stop <-chan struct{}) {
			if waitUntil(stop, func() bool { return countOf(pool, id, harvest.EventTimerStarted) == 1 }) {
				_, _ = e.Signal(context.Background(), SignalRequest{ExecutionID: id, SignalName: goSignal.Name(),
					Payload: []byte(`"sig"`), IdempotencyKey: "once"})
			}
		},
		state: StateCompleted, output: `"sig"`,
	}
	runTimeout := 300 * time.Millisecond
	// A delayed start of a limited workflow waits QUEUED, for the
	// dispatcher (an undelayed one would take its free slot in the start).
	queuedFor := time.Millisecond
	return map[loop.CrashPoint]crashScenario{
		crashLoaded: signalled, crashRan: signalled, crashBeforeCommit: signalled, crashCommitted: signalled,
		crashSignal: signalled,
		crashTimerFire: {
			req: StartRequest{WorkflowName: "crash_select", Input: []byte(`200`)}, act: func(*Engine, uuid.UUID, <-chan struct{}) {},
			state: StateCompleted, output: `"timeout"`,
		},
		crashCancel: {
			req: StartRequest{WorkflowName: "refund_on_cancel"},
			act: func(e *Engine, id uuid.UUID, stop <-chan struct{}) {
				if waitUntil(stop, func() bool { return countOf(pool, id, harvest.EventActivityCompleted) >= 1 }) {
					_, _ = e.Cancel(context.Background(), id, "crash test")
				}
			},
			state: StateCancelled,
		},
		crashOutboxClaimed: outboxScenario(), crashOutboxPerformed: outboxScenario(), crashOutboxRecord: outboxScenario(),
		crashOutboxResolved: outboxScenarioOf("outbox_by_id_crash"),
		crashChildClose:     outboxScenario(),
		crashActivityOutcome: {
			req: StartRequest{WorkflowName: "flaky", Input: []byte(`1`)}, act: func(*Engine, uuid.UUID, <-chan struct{}) {},
			state: StateCompleted, output: `2`,
		},
		crashTimeoutFire: {
			req: StartRequest{WorkflowName: "block", RunTimeout: &runTimeout}, act: func(*Engine, uuid.UUID, <-chan struct{}) {},
			state: StateTimedOut,
		},
		crashFlowBeforeCommit: {
			req: StartRequest{WorkflowName: "crash_limited", Input: []byte(`"ran"`), Delay: &queuedFor}, act: func(*Engine, uuid.UUID, <-chan struct{}) {},
			state: StateCompleted, output: `"ran"`,
		},
	}
}

// crashOnce is a hook that stops the engine the first time it reaches
// target: from then on every crash point blocks until the engine's loops
// end or frozen is closed, and fails.
func crashOnce(target loop.CrashPoint, hit, frozen chan struct{}) loop.Crash {
	var crashed atomic.Bool
	return func(ctx context.Context, p loop.CrashPoint) error {
		if p != target && !crashed.Load() {
			return nil
		}
		if crashed.CompareAndSwap(false, true) {
			close(hit)
		}
		select {
		case <-ctx.Done():
		case <-frozen:
		}
		return errCrashed
	}
}

func TestCrashPoints(t *testing.T) {
	t.Parallel()
	for _, p := range crashPoints {
		if slices.Contains(scheduleCrashPoints, p) || slices.Contains(deferredCrashPoints, p) {
			continue // TestScheduleCrashPoints, TestDeferredCrashPoints
		}
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.registerCrashWorkflows(t)
			sc, ok := crashScenarios(b.pool)[p]
			require.True(t, ok, "no scenario passes %s", p)
			hit, frozen := make(chan struct{}), make(chan struct{})
			e1 := b.engine(t, func(c *Config) { c.crashHook = crashOnce(p, hit, frozen) })
			run := start(t, e1, sc.req)
			acted := make(chan struct{})
			go func() { defer close(acted); sc.act(e1, run.ExecutionID, frozen) }()
			select {
			case <-hit:
			case <-time.After(20 * time.Second):
				t.Fatalf("the run never reached %s", p)
			}
			crash(e1)
			close(frozen)
			<-acted

			e2 := b.engine(t)
			sc.act(e2, run.ExecutionID, nil)
			x := waitClosed(t, e2, run.ExecutionID)
			require.Equal(t, sc.state, x.State)
			if sc.output != "" {
				require.JSONEq(t, sc.output, string(x.Output))
			}
			requireSoundHistory(t, b.pool, run.ExecutionID)
			if sc.check != nil {
				sc.check(t, b.pool, run.ExecutionID)
			}
		})
	}
	// The outbox's commands also cross every workflow task boundary.
	for _, p := range []loop.CrashPoint{crashLoaded, crashRan, crashBeforeCommit, crashCommitted} {
		t.Run("outbox/"+string(p), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.registerCrashWorkflows(t)
			runCrash(t, b, p, outboxScenario())
		})
	}
}

// runCrash crashes an engine at p while sc runs, resumes on a new engine
// and checks the run ends as without the crash.
func runCrash(t *testing.T, b *testBundle, p loop.CrashPoint, sc crashScenario) {
	hit, frozen := make(chan struct{}), make(chan struct{})
	e1 := b.engine(t, func(c *Config) { c.crashHook = crashOnce(p, hit, frozen) })
	run := start(t, e1, sc.req)
	select {
	case <-hit:
	case <-time.After(20 * time.Second):
		t.Fatalf("the run never reached %s", p)
	}
	crash(e1)
	close(frozen)
	e2 := b.engine(t)
	x := waitClosed(t, e2, run.ExecutionID)
	require.Equal(t, sc.state, x.State, x.LastError)
	require.JSONEq(t, sc.output, string(x.Output))
	requireSoundHistory(t, b.pool, run.ExecutionID)
	sc.check(t, b.pool, run.ExecutionID)
}

// requireSoundHistory checks that no event was lost or doubled: ids are
// dense, one WorkflowStarted first, one close last, each activity
// scheduled once and closed at most once, each timer started once.
func requireSoundHistory(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	var n, maxID int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), max(event_id) FROM harvest_events WHERE execution_id = $1`, id).Scan(&n, &maxID))
	require.Equal(t, n-1, maxID, "event ids are dense")
	types := eventTypes(t, pool, id)
	require.Equal(t, string(harvest.EventWorkflowStarted), types[0])
	require.Equal(t, 1, count(types, harvest.EventWorkflowStarted))
	closes := 0
	for _, s := range types {
		if harvest.EventType(s).IsTerminal() {
			closes++
		}
	}
	require.Equal(t, 1, closes)
	require.True(t, harvest.EventType(types[len(types)-1]).IsTerminal())
	var doubled int
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT count(*) FROM (
			SELECT coalesce(data->>'activity_id', data->>'timer_id'), event_type, count(*) FROM harvest_events
			 WHERE execution_id = $1
			   AND event_type IN ('ActivityScheduled', 'ActivityCompleted', 'ActivityFailed', 'TimerStarted', 'TimerFired', 'SignalReceived', 'WorkflowCancelRequested')
			 GROUP BY 1, 2 HAVING count(*) > 1) d`, id).Scan(&doubled))
	require.Zero(t, doubled, "an event was doubled: %v", types)
}

// waitUntil polls cond until it holds (true) or stop is closed (false).
func waitUntil(stop <-chan struct{}, cond func() bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-stop:
			return false
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
	return true
}

func countOf(pool *pgxpool.Pool, id uuid.UUID, typ harvest.EventType) int {
	var n int
	_ = pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_events WHERE execution_id = $1 AND event_type = $2`, id, string(typ)).Scan(&n)
	return n
}
