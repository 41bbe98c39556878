package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProbeBatch(t *testing.T) {
	t.Parallel()

	t.Run("MixedGroupAnswersEachProbe", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		live := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "live"})
		other := start(t, e, StartRequest{WorkflowName: "noop", IdempotencyKey: "live"})
		start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "old"})
		_, err := b.pool.Exec(context.Background(), `
			UPDATE harvest_start_idempotency SET created_at = now() - interval '25 hours' WHERE idempotency_key = 'old'`)
		require.NoError(t, err)

		calls := []*probeCall{
			{Name: "block", Key: "live"},
			{Name: "block", Key: "never"},
			{Name: "noop", Key: "live"},
			{Name: "block", Key: "old"}, // expired: not a replay
			{Name: "block", Key: "live"},
		}
		for _, c := range calls {
			c.Reply = make(chan probeReply, 1)
		}
		e.answerProbes(ctxT(t), calls)
		got := make([]probeReply, len(calls))
		for i, c := range calls {
			got[i] = <-c.Reply
			require.False(t, got[i].Single, "probe %d", i)
		}
		require.True(t, got[0].Found)
		require.Equal(t, live.ExecutionID, got[0].Claim.Res.ExecutionID)
		require.Equal(t, live.WorkflowID, got[0].Claim.Res.WorkflowID)
		require.Equal(t, "block", got[0].Claim.Res.WorkflowName)
		require.True(t, got[0].Claim.Res.Deduplicated)
		window := e.IdempotencyWindow()
		require.Less(t, got[0].Claim.Left, window, "a claim has less than the window left")
		require.Greater(t, got[0].Claim.Left, window-time.Minute, "a claim made a moment ago has almost the window left")
		require.False(t, got[1].Found)
		require.True(t, got[2].Found)
		require.Equal(t, other.ExecutionID, got[2].Claim.Res.ExecutionID, "the key is per workflow name")
		require.False(t, got[3].Found)
		require.Equal(t, got[0].Claim.Res, got[4].Claim.Res)
	})

	t.Run("FailedGroupSendsEachProbeAlone", func(t *testing.T) {
		t.Parallel()
		_, e := gcSetup(t)
		calls := []*probeCall{{Name: "block", Key: "a", Reply: make(chan probeReply, 1)}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		e.answerProbes(ctx, calls)
		require.True(t, (<-calls[0].Reply).Single)
	})

	t.Run("ConcurrentProbesThroughTheBatcher", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		require.NotNil(t, e.in.Probes.Load(), "the probe batcher runs with group commit")
		started := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k"})
		const n = 64
		type answer struct {
			res StartResult
			ok  bool
			err error
		}
		answers := make(chan answer, n)
		gate := make(chan struct{})
		for i := range n {
			go func() {
				<-gate
				key := "k"
				if i%2 == 1 {
					key = "missing"
				}
				res, ok, err := e.LookupStartKey(context.Background(), "block", key)
				answers <- answer{res, ok, err}
			}()
		}
		close(gate)
		hits := 0
		for range n {
			a := <-answers
			require.NoError(t, a.err)
			if a.ok {
				hits++
				require.Equal(t, started.ExecutionID, a.res.ExecutionID)
			}
		}
		require.Equal(t, n/2, hits)
	})
}
