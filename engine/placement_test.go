package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlacementClaims(t *testing.T) {
	t.Parallel()

	claim := func(key string, epoch uint64, target uint16) ClaimRequest {
		return ClaimRequest{WorkflowName: "block", IdempotencyKey: key, Epoch: epoch, Target: target}
	}
	placed := func(key string, epoch uint64) *Placement { return &Placement{Epoch: epoch, RoutingKey: key} }

	t.Run("RedirectRefusesOlderEpochStarts", func(t *testing.T) {
		t.Parallel()
		e := setup(t).engine(t)
		got, err := e.ClaimPlacement(ctxT(t), claim("k", 5, 9))
		require.NoError(t, err)
		require.Equal(t, ClaimResult{}, got, "nothing here: the key is redirected to shard 9")

		_, err = e.StartWorkflow(ctxT(t), StartRequest{WorkflowName: "block", IdempotencyKey: "k", Placement: placed("k", 4)})
		var moved *MovedError
		require.ErrorAs(t, err, &moved)
		require.Equal(t, MovedError{Shard: 9, Epoch: 5}, *moved)
		_, ok, err := e.LookupStartKey(ctxT(t), "block", "k")
		require.NoError(t, err)
		require.False(t, ok, "the refused start claimed nothing")

		res := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Placement: placed("k", 6)})
		require.True(t, res.StartedFresh, "a newer epoch placing the key here again may start it")
		other := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "other", Placement: placed("other", 1)})
		require.True(t, other.StartedFresh, "other keys are not affected")
	})

	t.Run("ClaimFindsLiveClaimAndHolder", func(t *testing.T) {
		t.Parallel()
		e := setup(t).engine(t)
		run := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "order-1", IdempotencyKey: "k"})
		got, err := e.ClaimPlacement(ctxT(t), claim("k", 2, 3))
		require.NoError(t, err)
		require.NotNil(t, got.Claim)
		require.Equal(t, run.ExecutionID, got.Claim.ExecutionID)

		got, err = e.ClaimPlacement(ctxT(t), ClaimRequest{WorkflowName: "block", WorkflowID: "order-1", Epoch: 2, Target: 3})
		require.NoError(t, err)
		require.NotNil(t, got.Holder)
		require.Equal(t, run.ExecutionID, got.Holder.ExecutionID)

		var redirects int
		require.NoError(t, e.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_placement_redirects`).Scan(&redirects))
		require.Zero(t, redirects, "a claim that found the run redirects nothing")
	})

	t.Run("OlderClaimFollowsNewerRedirect", func(t *testing.T) {
		t.Parallel()
		e := setup(t).engine(t)
		_, err := e.ClaimPlacement(ctxT(t), claim("k", 7, 2))
		require.NoError(t, err)
		got, err := e.ClaimPlacement(ctxT(t), claim("k", 6, 4))
		require.NoError(t, err)
		require.Equal(t, &MovedError{Shard: 2, Epoch: 7}, got.Moved)
		got, err = e.ClaimPlacement(ctxT(t), claim("k", 8, 4))
		require.NoError(t, err)
		require.Nil(t, got.Moved, "a newer epoch takes the redirect over")
		_, err = e.StartWorkflow(ctxT(t), StartRequest{WorkflowName: "block", IdempotencyKey: "k", Placement: placed("k", 7)})
		require.ErrorAs(t, err, new(*MovedError))
	})

	t.Run("SignalWithStartRefusedWhenMoved", func(t *testing.T) {
		t.Parallel()
		e := setup(t).engine(t)
		_, err := e.ClaimPlacement(ctxT(t), ClaimRequest{WorkflowName: "block", WorkflowID: "cart-1", Epoch: 3, Target: 1})
		require.NoError(t, err)
		_, err = e.SignalWithStart(ctxT(t), SignalWithStartRequest{
			Start:      StartRequest{WorkflowName: "block", WorkflowID: "cart-1", Placement: placed("cart-1", 2)},
			SignalName: "go"})
		require.ErrorAs(t, err, new(*MovedError))
		var runs int
		require.NoError(t, e.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_executions`).Scan(&runs))
		require.Zero(t, runs)
	})

	t.Run("InvalidClaim", func(t *testing.T) {
		t.Parallel()
		e := setup(t).engine(t)
		for _, req := range []ClaimRequest{{IdempotencyKey: "k", Epoch: 1}, {WorkflowName: "block", Epoch: 1}, claim("k", 0, 1)} {
			_, err := e.ClaimPlacement(ctxT(t), req)
			require.ErrorIs(t, err, ErrInvalidArgument)
		}
	})

	t.Run("GroupCommitRefusesMovedStarts", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		for _, c := range []ClaimRequest{claim("moved", 5, 9), {WorkflowName: "block", WorkflowID: "wf-moved", Epoch: 5, Target: 9}, claim("kept", 3, 9)} {
			_, err := e.ClaimPlacement(ctxT(t), c)
			require.NoError(t, err)
		}
		r := runBatch(t, e,
			StartRequest{WorkflowName: "block", IdempotencyKey: "moved", Placement: placed("moved", 4)},
			StartRequest{WorkflowName: "block", WorkflowID: "wf-moved", Placement: placed("wf-moved", 4)},
			StartRequest{WorkflowName: "block", IdempotencyKey: "kept", Placement: placed("kept", 4)},
			StartRequest{WorkflowName: "block", IdempotencyKey: "fresh", Placement: placed("fresh", 4)},
			StartRequest{WorkflowName: "block", IdempotencyKey: "moved", Placement: placed("moved", 4)},
			StartRequest{WorkflowName: "block", IdempotencyKey: "unplaced"})
		for _, i := range []int{0, 1, 4} {
			var moved *MovedError
			require.ErrorAs(t, r.errs[i], &moved, "request %d", i)
			require.Equal(t, MovedError{Shard: 9, Epoch: 5}, *moved)
		}
		for _, i := range []int{2, 3, 5} {
			require.NoError(t, r.errs[i], "request %d", i)
			require.True(t, r.res[i].StartedFresh, "request %d", i)
			require.False(t, r.replies[i].Single, "request %d stayed in the batch", i)
		}
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency WHERE idempotency_key = 'moved'`),
			"a refused start leaves no claim")
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM harvest_executions WHERE workflow_id = 'wf-moved' OR idempotency_key = 'moved'`))
		require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
	})

	// The race the fault suite found: a start placed by an older catalog
	// creating its run on the old shard while a start placed by the newer
	// catalog claims the key there. Exactly one of them must see the other,
	// through the single path and through group commit.
	for _, batch := range []int{1, StartBatchMaxDefault} {
		t.Run(fmt.Sprintf("OldEpochStartAndNewEpochClaimAreOrdered/batch%d", batch), func(t *testing.T) {
			t.Parallel()
			e := setup(t).engine(t, func(c *Config) { c.StartBatchMax = batch })
			raceStartAndClaim(t, e)
		})
	}
}

func raceStartAndClaim(t *testing.T, e *Engine) {
	placed := func(key string, epoch uint64) *Placement { return &Placement{Epoch: epoch, RoutingKey: key} }
	claim := func(key string, epoch uint64, target uint16) ClaimRequest {
		return ClaimRequest{WorkflowName: "block", IdempotencyKey: key, Epoch: epoch, Target: target}
	}
	{
		const keys = 60
		var created, redirected int
		for i := range keys {
			key := fmt.Sprintf("race-%d", i)
			var (
				wg       sync.WaitGroup
				res      StartResult
				startErr error
				got      ClaimResult
				claimErr error
				gate     = make(chan struct{})
			)
			wg.Go(func() {
				<-gate
				res, startErr = e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", IdempotencyKey: key, Placement: placed(key, 1)})
			})
			wg.Go(func() {
				<-gate
				got, claimErr = e.ClaimPlacement(context.Background(), claim(key, 2, 7))
			})
			close(gate)
			wg.Wait()
			require.NoError(t, claimErr)
			var moved *MovedError
			switch {
			case startErr == nil:
				require.True(t, res.StartedFresh)
				require.NotNil(t, got.Claim, "key %s: the run was created, so the claim must have found it", key)
				require.Equal(t, res.ExecutionID, got.Claim.ExecutionID)
				created++
			case errors.As(startErr, &moved):
				require.Nil(t, got.Claim, "key %s", key)
				require.Equal(t, uint16(7), moved.Shard)
				redirected++
			default:
				t.Fatalf("key %s: unexpected start error %v", key, startErr)
			}
		}
		require.Equal(t, keys, created+redirected)
		t.Logf("of %d races: %d runs created first, %d starts redirected", keys, created, redirected)
	}
}

func TestSweepRedirects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	for _, k := range []string{"old", "new"} {
		_, err := e.ClaimPlacement(ctxT(t), ClaimRequest{WorkflowName: "block", IdempotencyKey: k, Epoch: 2, Target: 1})
		require.NoError(t, err)
	}
	_, err := b.pool.Exec(ctxT(t), `UPDATE harvest_placement_redirects SET created_at = now() - interval '25 hours' WHERE routing_key = 'old'`)
	require.NoError(t, err)
	n, err := e.SweepRedirects(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	var left string
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT routing_key FROM harvest_placement_redirects`).Scan(&left))
	require.Equal(t, "new", left)
}
