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

	// Each refusal names its start and leaves nothing of the batch: no
	// run, no claim.
	for _, tc := range []struct {
		name  string
		busy  bool // a run holds workflow id "busy" first
		reqs  []StartRequest
		index int
		want  error
	}{
		{"OpenRunFailsEveryStart", true,
			append(keyed(t, "a", "b"), StartRequest{WorkflowName: "block", WorkflowID: "busy", IdempotencyKey: "c"}), 2, ErrWorkflowIDBusy},
		{"WorkflowIDTwiceInTheBatch", false,
			[]StartRequest{{WorkflowName: "block", WorkflowID: "twice"}, {WorkflowName: "block", WorkflowID: "twice"}}, 1, ErrInvalidArgument},
		{"FailedFreshCheckFailsEveryStart", false,
			append(keyed(t, "a"), StartRequest{WorkflowName: "no_such_workflow"}), 1, ErrUnknownWorkflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			e := b.engine(t)
			before := 0
			if tc.busy {
				start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "busy"})
				before = 1
			}
			_, err := e.StartAtomic(ctxT(t), tc.reqs)
			var ae *AtomicError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.index, ae.Index)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, before, runs(t, b), "nothing of the batch was written")
			require.Zero(t, claims(t, b), "no key of the batch stays claimed")
			// Without the refused start the same keys are fresh.
			rest := append(tc.reqs[:tc.index:tc.index], tc.reqs[tc.index+1:]...)
			res, err := e.StartAtomic(ctxT(t), rest)
			require.NoError(t, err)
			for i, r := range res {
				require.True(t, r.StartedFresh, "start %d", i)
			}
		})
	}

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
