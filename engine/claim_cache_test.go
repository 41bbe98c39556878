package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReplayFromMemory checks that replays are answered from the claim
// cache, and never with an answer the database would no longer give.
// Claims are removed behind the engine's back only to see where an answer
// came from.
func TestReplayFromMemory(t *testing.T) {
	t.Parallel()
	dropClaim := func(t *testing.T, b *testBundle, key string) {
		t.Helper()
		_, err := b.pool.Exec(context.Background(), `DELETE FROM harvest_start_idempotency WHERE idempotency_key = $1`, key)
		require.NoError(t, err)
	}
	lookup := func(t *testing.T, e *Engine, key string) (StartResult, bool) {
		t.Helper()
		res, ok, err := e.LookupStartKey(ctxT(t), "block", key)
		require.NoError(t, err)
		return res, ok
	}

	// A RUNNING state answers for at most the poll interval.
	longPoll := func(c *Config) { c.PollInterval = time.Hour }
	// closedRun starts a run under key "k" and waits for it to complete.
	closedRun := func(t *testing.T, e *Engine) StartResult {
		t.Helper()
		started := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Input: raw(t, "complete")})
		waitClosed(t, e, started.ExecutionID)
		return started
	}

	t.Run("AFreshClaimIsAnsweredWithoutARead", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t, longPoll)
		started := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Input: raw(t, "wait")})
		require.True(t, started.StartedFresh)
		dropClaim(t, b, "k")
		res, ok := lookup(t, e, "k")
		require.True(t, ok, "answered from memory")
		require.Equal(t, started.ExecutionID, res.ExecutionID)
		require.Equal(t, started.WorkflowID, res.WorkflowID)
		require.Equal(t, StateRunning, res.State)
		require.True(t, res.Deduplicated)
		require.False(t, res.StartedFresh)
	})

	t.Run("AReadClaimIsAnsweredWithoutAnotherRead", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		started := closedRun(t, e)
		e.in.Forget()
		res, ok := lookup(t, e, "k")
		require.True(t, ok)
		require.Equal(t, started.ExecutionID, res.ExecutionID)
		dropClaim(t, b, "k")
		res, ok = lookup(t, e, "k")
		require.True(t, ok, "the read was cached")
		require.Equal(t, started.ExecutionID, res.ExecutionID)
	})

	t.Run("AClaimABatchFoundIsAnsweredWithoutARead", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		started := closedRun(t, e)
		e.in.Forget()
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Input: raw(t, "complete")})
		require.NoError(t, r.errs[0])
		require.True(t, r.res[0].Deduplicated, "the batch found the live claim")
		dropClaim(t, b, "k")
		res, ok := lookup(t, e, "k")
		require.True(t, ok, "the claim the batch found was cached")
		require.Equal(t, started.ExecutionID, res.ExecutionID)
		require.Equal(t, StateCompleted, res.State)
	})

	t.Run("AClosedRunIsNeverAnsweredRunning", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t, longPoll)
		started := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Input: raw(t, "wait")})
		res, ok := lookup(t, e, "k")
		require.True(t, ok)
		require.Equal(t, StateRunning, res.State)
		_, err := e.Terminate(ctxT(t), started.ExecutionID, "done with it")
		require.NoError(t, err)
		res, ok = lookup(t, e, "k")
		require.True(t, ok)
		require.Equal(t, StateTerminated, res.State, "the close is seen at once")
		dropClaim(t, b, "k")
		res, ok = lookup(t, e, "k")
		require.True(t, ok, "the closed state was cached")
		require.Equal(t, StateTerminated, res.State)
	})

	t.Run("ARunningRunIsReadAfterTheLeaseChanges", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t, longPoll)
		start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Input: raw(t, "wait")})
		e.closed.Forget() // as when the lease changes hands: closes may commit elsewhere
		dropClaim(t, b, "k")
		_, ok := lookup(t, e, "k")
		require.False(t, ok, "a run not known open is read")
	})

	t.Run("ARestartForgets", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		closedRun(t, e)
		_, ok := lookup(t, e, "k") // caches the closed state
		require.True(t, ok)
		dropClaim(t, b, "k")
		_, ok = lookup(t, e, "k")
		require.True(t, ok, "answered from memory")
		e.Stop()
		require.NoError(t, e.Start(ctxT(t)))
		_, ok = lookup(t, e, "k")
		require.False(t, ok, "taking the lease again forgets what was cached")
	})

	t.Run("AnExpiredClaimIsNotAnswered", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const window = 3 * time.Second
		e := b.engine(t, func(c *Config) { c.IdempotencyWindow = window })
		start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Input: raw(t, "complete")})
		_, ok := lookup(t, e, "k")
		require.True(t, ok)
		require.Eventually(t, func() bool {
			var expired bool
			require.NoError(t, b.pool.QueryRow(context.Background(), `
				SELECT created_at < now() - $1 * interval '1 millisecond' FROM harvest_start_idempotency
				 WHERE idempotency_key = 'k'`, window.Milliseconds()).Scan(&expired))
			return expired
		}, 10*time.Second, 20*time.Millisecond)
		_, ok = lookup(t, e, "k")
		require.False(t, ok, "once the database says the claim expired, memory does not answer it")
		again := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k", Input: raw(t, "complete")})
		require.True(t, again.StartedFresh, "an expired key starts a new run")
	})
}
