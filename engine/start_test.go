package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

func TestStartIdempotency(t *testing.T) {
	t.Parallel()

	t.Run("ConcurrentSameKeyStartsCreateOneExecution", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		const n = 64
		results := make([]StartResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-gate
				results[i], errs[i] = e.StartWorkflow(context.Background(), StartRequest{
					WorkflowName: "block", IdempotencyKey: "webhook-evt-abc123", Input: raw(t, "x")})
			})
		}
		close(gate)
		wg.Wait()
		fresh, dedup := 0, 0
		for i := range n {
			require.NoError(t, errs[i])
			require.Equal(t, results[0].ExecutionID, results[i].ExecutionID)
			if results[i].StartedFresh {
				fresh++
			}
			if results[i].Deduplicated {
				dedup++
			}
		}
		require.Equal(t, 1, fresh)
		require.Equal(t, n-1, dedup)
		var runs, started int
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_executions`).Scan(&runs))
		require.NoError(t, b.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM harvest_events WHERE event_type = 'WorkflowStarted'`).Scan(&started))
		require.Equal(t, 1, runs)
		require.Equal(t, 1, started)
	})

	t.Run("KeyAfterWindowStartsFreshRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t, func(c *Config) { c.IdempotencyWindow = 3 * time.Second })
		first := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k"})
		again := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k"})
		require.True(t, again.Deduplicated)
		// The claim expires: a replay probe no longer finds it (nor does
		// the engine's memory of it).
		require.Eventually(t, func() bool {
			_, ok, err := e.LookupStartKey(context.Background(), "block", "k")
			require.NoError(t, err)
			return !ok
		}, 10*time.Second, 20*time.Millisecond, "an expired claim is not a replay")
		later := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k"})
		require.True(t, later.StartedFresh)
		require.False(t, later.Deduplicated)
		require.NotEqual(t, first.ExecutionID, later.ExecutionID)
		replay := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k"})
		require.Equal(t, later.ExecutionID, replay.ExecutionID, "the renewed claim points at the new run")
	})

	t.Run("SweeperDeletesOnlyExpiredClaims", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t, func(c *Config) { c.SweepBatch = 2 })
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			start(t, e, StartRequest{WorkflowName: "noop", IdempotencyKey: k})
		}
		_, err := b.pool.Exec(context.Background(), `UPDATE harvest_start_idempotency SET created_at = now() - interval '2 days' WHERE idempotency_key <> 'e'`)
		require.NoError(t, err)
		n, err := e.SweepStartClaims(context.Background())
		require.NoError(t, err)
		require.Equal(t, int64(4), n)
		_, ok, err := e.LookupStartKey(context.Background(), "noop", "e")
		require.NoError(t, err)
		require.True(t, ok)
	})

	t.Run("ReplayShortCircuitsFreshChecks", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		first := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "evt-1"})
		gateClosed := errors.New("admission blocked")
		res, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", IdempotencyKey: "evt-1",
			FreshChecks: func(context.Context) error { return gateClosed }})
		require.NoError(t, err)
		require.True(t, res.Deduplicated)
		require.Equal(t, first.ExecutionID, res.ExecutionID)
		// A fresh key still runs the check.
		_, err = e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", IdempotencyKey: "evt-2",
			FreshChecks: func(context.Context) error { return gateClosed }})
		require.ErrorIs(t, err, gateClosed)
		// Unknown workflows are a fresh-start check too: a replay wins.
		_, err = e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "nope", IdempotencyKey: "evt-3"})
		require.ErrorIs(t, err, ErrUnknownWorkflow)
	})

	t.Run("KeyScopeIsPerWorkflowName", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		a := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "same"})
		c := start(t, e, StartRequest{WorkflowName: "collect", IdempotencyKey: "same"})
		require.True(t, a.StartedFresh)
		require.True(t, c.StartedFresh)
		require.NotEqual(t, a.ExecutionID, c.ExecutionID)
	})

	t.Run("UnkeyedStartsAreIndependent", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		a := start(t, e, StartRequest{WorkflowName: "block"})
		c := start(t, e, StartRequest{WorkflowName: "block"})
		require.NotEqual(t, a.ExecutionID, c.ExecutionID)
		require.NotEqual(t, a.WorkflowID, c.WorkflowID, "minted workflow ids differ")
		require.Equal(t, uint16(7), ShardOf(a.ExecutionID), "execution ids carry the shard")
	})

	t.Run("RejectedStartLeavesNoClaim", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "order-1"})
		_, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", WorkflowID: "order-1",
			IdempotencyKey: "k", ReusePolicy: ReuseRejectDuplicate})
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		_, ok, err := e.LookupStartKey(context.Background(), "block", "k")
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("AttachedKeyedStartReplaysToExistingRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		prior := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "order-2"})
		att := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "order-2", IdempotencyKey: "k2"})
		require.False(t, att.StartedFresh)
		require.False(t, att.Deduplicated)
		require.Equal(t, prior.ExecutionID, att.ExecutionID)
		again := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "order-2", IdempotencyKey: "k2"})
		require.True(t, again.Deduplicated)
		require.Equal(t, prior.ExecutionID, again.ExecutionID)
	})
}

// prior states a matrix cell can start from; "" is no prior run.
var priorStates = []string{"", StateRunning, StateCompleted, StateFailed, StateCancelled, StateTerminated}

// makePrior creates a run of workflow id wfID in the given state.
func makePrior(t *testing.T, e *Engine, wfID, state string) uuid.UUID {
	t.Helper()
	switch state {
	case "":
		return uuid.Nil
	case StateCompleted:
		r := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: wfID, Input: raw(t, "complete")})
		require.Equal(t, StateCompleted, waitClosed(t, e, r.ExecutionID).State)
		return r.ExecutionID
	case StateFailed:
		r := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: wfID, Input: raw(t, "fail")})
		require.Equal(t, StateFailed, waitClosed(t, e, r.ExecutionID).State)
		return r.ExecutionID
	}
	r := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: wfID})
	var err error
	switch state {
	case StateCancelled:
		_, err = e.Cancel(context.Background(), r.ExecutionID, "setup")
		require.NoError(t, err)
		require.Equal(t, StateCancelled, waitClosed(t, e, r.ExecutionID).State)
	case StateTerminated:
		_, err = e.Terminate(context.Background(), r.ExecutionID, "setup")
	}
	require.NoError(t, err)
	return r.ExecutionID
}

func TestStartMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	reuses := []ReusePolicy{ReuseAllowDuplicate, ReuseRejectDuplicate, ReuseAllowDuplicateFailedOnly, ReuseTerminateIfRunning}
	conflicts := []ConflictPolicy{ConflictUnspecified, ConflictFail, ConflictUseExisting, ConflictTerminateExisting}
	// want[prior][reuse][conflict]; closed priors ignore the conflict policy.
	closedRow := func(completed bool) map[ReusePolicy]decision {
		failedOnly := decideFresh
		if completed {
			failedOnly = decideAttach
		}
		return map[ReusePolicy]decision{ReuseAllowDuplicate: decideAttach, ReuseRejectDuplicate: decideReject,
			ReuseAllowDuplicateFailedOnly: failedOnly, ReuseTerminateIfRunning: decideFresh}
	}
	running := map[ReusePolicy][4]decision{
		ReuseAllowDuplicate:           {decideAttach, decideReject, decideAttach, decideTerminateAndStart},
		ReuseRejectDuplicate:          {decideReject, decideReject, decideAttach, decideTerminateAndStart},
		ReuseAllowDuplicateFailedOnly: {decideAttach, decideReject, decideAttach, decideTerminateAndStart},
		ReuseTerminateIfRunning:       {decideTerminateAndStart, decideReject, decideAttach, decideTerminateAndStart},
	}
	want := func(prior string, r ReusePolicy, ci int) decision {
		switch prior {
		case "", StateTerminated:
			return decideFresh
		case StateRunning:
			return running[r][ci]
		}
		return closedRow(prior == StateCompleted)[r]
	}
	for _, prior := range priorStates {
		for _, r := range reuses {
			for ci, c := range conflicts {
				wfID := "m-" + prior + "-" + string(r) + "-" + string(c)
				priorID := makePrior(t, e, wfID, prior)
				w := want(prior, r, ci)
				slotState := prior
				if prior == StateTerminated {
					slotState = "" // a terminated run holds no slot
				}
				require.Equal(t, w, decideStart(slotState, r, c), "pure matrix %s", wfID)
				res, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", WorkflowID: wfID,
					ReusePolicy: r, ConflictPolicy: c, AllowTerminate: true})
				switch w {
				case decideReject:
					var conflict *ConflictError
					require.ErrorAs(t, err, &conflict, wfID)
					require.Equal(t, priorID.String(), conflict.ExistingExecutionID)
					require.Equal(t, prior, conflict.ExistingState)
				case decideAttach:
					require.NoError(t, err, wfID)
					require.False(t, res.StartedFresh, wfID)
					require.Equal(t, priorID, res.ExecutionID, wfID)
				case decideFresh, decideTerminateAndStart:
					require.NoError(t, err, wfID)
					require.True(t, res.StartedFresh, wfID)
					require.NotEqual(t, priorID, res.ExecutionID, wfID)
					if priorID != uuid.Nil {
						x, err := e.GetExecution(context.Background(), priorID)
						require.NoError(t, err)
						wantState := prior
						if w == decideTerminateAndStart {
							wantState = StateTerminated
						}
						require.Equal(t, wantState, x.State, wfID)
					}
				}
			}
		}
	}

	t.Run("TerminatingCellsNeedPermission", func(t *testing.T) {
		makePrior(t, e, "perm", StateRunning)
		_, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", WorkflowID: "perm",
			ConflictPolicy: ConflictTerminateExisting})
		require.ErrorIs(t, err, ErrTerminateNotAllowed)
	})
}

func TestSignalWithStartMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	reuses := []ReusePolicy{ReuseAllowDuplicate, ReuseRejectDuplicate, ReuseAllowDuplicateFailedOnly, ReuseTerminateIfRunning}
	want := map[string][4]decision{
		"":              {decideFresh, decideFresh, decideFresh, decideFresh},
		StateRunning:    {decideSignal, decideReject, decideSignal, decideTerminateAndStart},
		StateCompleted:  {decideFresh, decideReject, decideFresh, decideFresh},
		StateFailed:     {decideFresh, decideReject, decideFresh, decideFresh},
		StateCancelled:  {decideFresh, decideReject, decideFresh, decideFresh},
		StateTerminated: {decideFresh, decideFresh, decideFresh, decideFresh},
	}
	for _, prior := range priorStates {
		for ri, r := range reuses {
			wfID := "sws-" + prior + "-" + string(r)
			priorID := makePrior(t, e, wfID, prior)
			w := want[prior][ri]
			slotState := prior
			if prior == StateTerminated {
				slotState = ""
			}
			require.Equal(t, w, decideSignalWithStart(slotState, r), "pure matrix %s", wfID)
			res, err := e.SignalWithStart(context.Background(), SignalWithStartRequest{
				Start:      StartRequest{WorkflowName: "block", WorkflowID: wfID, ReusePolicy: r, AllowTerminate: true},
				SignalName: "go", SignalPayload: raw(t, "now")})
			switch w {
			case decideReject:
				var conflict *ConflictError
				require.ErrorAs(t, err, &conflict, wfID)
			case decideSignal:
				require.NoError(t, err, wfID)
				require.False(t, res.StartedFresh, wfID)
				require.True(t, res.SignalDelivered, wfID)
				require.Equal(t, priorID, res.ExecutionID, wfID)
			default:
				require.NoError(t, err, wfID)
				require.True(t, res.StartedFresh, wfID)
				require.True(t, res.SignalDelivered, wfID)
				require.NotEqual(t, priorID, res.ExecutionID, wfID)
				types := eventTypes(t, b.pool, res.ExecutionID)
				require.Equal(t, []string{"WorkflowStarted", "SignalReceived"}, types[:2], wfID)
			}
			if w != decideReject {
				x := waitClosed(t, e, res.ExecutionID)
				require.JSONEq(t, `"now"`, string(x.Output), wfID)
			}
		}
	}

	t.Run("KeyedRetryAfterCloseStartsNothing", func(t *testing.T) {
		req := SignalWithStartRequest{Start: StartRequest{WorkflowName: "block", WorkflowID: "sws-key"},
			SignalName: "go", SignalPayload: raw(t, "v"), IdempotencyKey: "evt-9"}
		first, err := e.SignalWithStart(context.Background(), req)
		require.NoError(t, err)
		require.True(t, first.StartedFresh)
		waitClosed(t, e, first.ExecutionID)
		retry, err := e.SignalWithStart(context.Background(), req)
		require.NoError(t, err)
		require.False(t, retry.StartedFresh)
		require.False(t, retry.SignalDelivered)
		require.Equal(t, first.ExecutionID, retry.ExecutionID)
		var runs int
		require.NoError(t, b.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM harvest_executions WHERE workflow_id = 'sws-key'`).Scan(&runs))
		require.Equal(t, 1, runs)
	})
}

func TestPolicyParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want ReusePolicy
		ok   bool
	}{{"", ReuseAllowDuplicate, true}, {"reject_duplicate", ReuseRejectDuplicate, true}, {"bogus", "", false}} {
		got, err := ParseReusePolicy(tc.in)
		require.Equal(t, tc.ok, err == nil, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	_, err := ParseConflictPolicy("nope")
	require.ErrorIs(t, err, ErrInvalidArgument)
	got, err := ParseConflictPolicy("")
	require.NoError(t, err)
	require.Equal(t, ConflictUnspecified, got)
	_ = harvest.EventWorkflowStarted
}
