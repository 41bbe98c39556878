package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStartAtomic(t *testing.T) {
	t.Parallel()

	keyed := func(t *testing.T, keys ...string) []StartRequest {
		reqs := make([]StartRequest, len(keys))
		for i, k := range keys {
			reqs[i] = StartRequest{WorkflowName: "block", IdempotencyKey: k, Input: raw(t, k)}
		}
		return reqs
	}
	runs := func(t *testing.T, b *testBundle) int {
		return countRows(t, b, `SELECT count(*) FROM harvest_executions`)
	}
	claims := func(t *testing.T, b *testBundle) int {
		return countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency`)
	}

	t.Run("CreatesEveryStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		reqs := append(keyed(t, "a", "b", "c"), StartRequest{WorkflowName: "block", WorkflowID: "plain"})
		res, err := e.StartAtomic(ctxT(t), reqs)
		require.NoError(t, err)
		require.Len(t, res, 4)
		for i, r := range res {
			require.True(t, r.StartedFresh, "start %d", i)
		}
		require.Equal(t, "plain", res[3].WorkflowID)
		require.Equal(t, 4, runs(t, b))
	})

	t.Run("ResentBatchCreatesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		first, err := e.StartAtomic(ctxT(t), keyed(t, "a", "b", "c"))
		require.NoError(t, err)
		again, err := e.StartAtomic(ctxT(t), keyed(t, "a", "b", "c"))
		require.NoError(t, err)
		for i := range first {
			require.True(t, again[i].Deduplicated, "start %d", i)
			require.Equal(t, first[i].ExecutionID, again[i].ExecutionID, "start %d", i)
		}
		require.Equal(t, 3, runs(t, b))
	})

	t.Run("KeyRepeatedInsideTheBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		res, err := e.StartAtomic(ctxT(t), keyed(t, "a", "b", "a"))
		require.NoError(t, err)
		require.Equal(t, res[0].ExecutionID, res[2].ExecutionID)
		require.True(t, res[2].Deduplicated)
		require.Equal(t, 2, runs(t, b))
	})

	t.Run("OpenRunFailsEveryStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "busy"})
		reqs := append(keyed(t, "a", "b"), StartRequest{WorkflowName: "block", WorkflowID: "busy", IdempotencyKey: "c"})
		_, err := e.StartAtomic(ctxT(t), reqs)
		var ae *AtomicError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, 2, ae.Index)
		require.ErrorIs(t, err, ErrWorkflowIDBusy)
		require.Equal(t, 1, runs(t, b), "nothing of the batch was written")
		require.Zero(t, claims(t, b), "no key of the batch stays claimed")
		// Without the busy start the same keys are fresh: nothing was kept.
		res, err := e.StartAtomic(ctxT(t), keyed(t, "a", "b"))
		require.NoError(t, err)
		require.True(t, res[0].StartedFresh && res[1].StartedFresh)
	})

	t.Run("WorkflowIDTwiceInTheBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		reqs := []StartRequest{{WorkflowName: "block", WorkflowID: "twice"}, {WorkflowName: "block", WorkflowID: "twice"}}
		_, err := e.StartAtomic(ctxT(t), reqs)
		var ae *AtomicError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, 1, ae.Index)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.Zero(t, runs(t, b))
	})

	t.Run("FailedFreshCheckFailsEveryStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		reqs := append(keyed(t, "a"), StartRequest{WorkflowName: "no_such_workflow"})
		_, err := e.StartAtomic(ctxT(t), reqs)
		var ae *AtomicError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, 1, ae.Index)
		require.ErrorIs(t, err, ErrUnknownWorkflow)
		require.Zero(t, runs(t, b))
	})

	t.Run("Size", func(t *testing.T) {
		t.Parallel()
		e := setup(t).engine(t)
		for _, n := range []int{0, MaxAtomicStarts + 1} {
			reqs := make([]StartRequest, n)
			for i := range reqs {
				reqs[i] = StartRequest{WorkflowName: "block", WorkflowID: fmt.Sprint(i)}
			}
			_, err := e.StartAtomic(ctxT(t), reqs)
			require.ErrorIs(t, err, ErrInvalidArgument, "%d starts", n)
		}
	})
}
