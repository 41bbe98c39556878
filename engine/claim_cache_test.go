package engine

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestClaimCache(t *testing.T) {
	t.Parallel()
	now := time.Now()
	open := func(StartResult) bool { return true }
	closed := func(StartResult) bool { return false }
	res := func(state string) StartResult {
		return StartResult{ExecutionID: uuid.New(), WorkflowName: "w", WorkflowID: "id", State: state, StartedFresh: true}
	}

	cases := []struct {
		name  string
		state string
		left  time.Duration
		at    time.Duration // after now
		open  func(StartResult) bool
		hit   bool
	}{
		{"TerminalIsAnswered", StateCompleted, time.Hour, time.Minute, closed, true},
		{"RunningKnownOpenIsAnswered", StateRunning, time.Hour, time.Minute, open, true},
		{"RunningNotKnownOpenIsRead", StateRunning, time.Hour, time.Minute, closed, false},
		{"UnknownStateIsNotCached", "", time.Hour, 0, open, false},
		{"NoTimeLeftIsNotCached", StateCompleted, 0, 0, open, false},
		{"StopsBeforeTheClaimExpires", StateCompleted, 64 * time.Second, 63 * time.Second, open, false},
		{"UsedUpToThen", StateCompleted, 64 * time.Second, 62 * time.Second, open, true},
		{"RunningAnswersForAtMostRunningFor", StateRunning, time.Hour, 11 * time.Minute, open, false},
		{"TerminalOutlivesRunningFor", StateCompleted, time.Hour, 11 * time.Minute, closed, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClaimCache(8, 10*time.Minute)
			r := res(tc.state)
			c.put(c.generation(), "k", r, now, tc.left)
			got, ok := c.get("w", "k", now.Add(tc.at), tc.open)
			require.Equal(t, tc.hit, ok)
			if tc.hit {
				require.Equal(t, r.ExecutionID, got.ExecutionID)
				require.True(t, got.Deduplicated, "a cached answer is a replay")
				require.False(t, got.StartedFresh)
			}
			_, ok = c.get("other", "k", now, tc.open)
			require.False(t, ok, "keys are per workflow name")
		})
	}

	t.Run("ForgetDropsEntriesAndEarlierReads", func(t *testing.T) {
		t.Parallel()
		c := newClaimCache(8, 10*time.Minute)
		before := c.generation()
		c.put(before, "a", res(StateCompleted), now, time.Hour)
		c.forget()
		_, ok := c.get("w", "a", now, open)
		require.False(t, ok, "forget drops what was cached")
		c.put(before, "b", res(StateCompleted), now, time.Hour)
		_, ok = c.get("w", "b", now, open)
		require.False(t, ok, "an answer read before a forget is not cached after it")
		c.put(c.generation(), "b", res(StateCompleted), now, time.Hour)
		_, ok = c.get("w", "b", now, open)
		require.True(t, ok)
	})

	t.Run("BoundedByTwoGenerations", func(t *testing.T) {
		t.Parallel()
		c := newClaimCache(2, 10*time.Minute)
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			c.put(c.generation(), k, res(StateCompleted), now, time.Hour)
		}
		for k, want := range map[string]bool{"a": false, "b": false, "c": true, "d": true, "e": true} {
			_, ok := c.get("w", k, now, open)
			require.Equal(t, want, ok, "key %s", k)
		}
	})
}

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
		e.claims.forget()
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
		e.claims.forget()
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
