package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
)

// The outbox's keyed operations go through the node's own API (Outbound):
// children and signals to other workflows land once, answers map to the
// engine's errors.
func TestOutbound(t *testing.T) {
	b := setup(t)
	t.Run("ChildrenThroughTheAPI", func(t *testing.T) {
		r := b.do(t, "POST", "/workflows/"+demo.ParentChainName+"/start?wait=20s",
			map[string]any{"input": map[string]any{"children": 2, "activities": 1}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		result := r.Body["result"].(map[string]any)
		require.Equal(t, "COMPLETED", result["state"], "%s", r.Raw)
		require.EqualValues(t, 2, result["output"])

		id := r.Body["execution_id"].(string)
		list := b.do(t, "GET", "/workflows/"+id+"/children", nil)
		require.Equal(t, http.StatusOK, list.Status, "%s", list.Raw)
		children := list.Body["children"].([]any)
		require.Len(t, children, 2)
		first := children[0].(map[string]any)
		require.Equal(t, "COMPLETED", first["state"], "%s", list.Raw)
		require.Equal(t, id+"-1", first["workflow_id"])
		require.Equal(t, "terminate", first["parent_close_policy"])
		d := b.do(t, "GET", "/workflows/"+id, nil)
		require.Len(t, d.Body["children"], 2)

		requireError(t, b.do(t, "GET", "/workflows/"+engine.NewExecutionID(3).String()+"/children", nil), http.StatusNotFound, codeNotFound)
		requireError(t, b.do(t, "GET", "/workflows/nope/children", nil), http.StatusBadRequest, codeInvalidArgument)
		leaf := b.do(t, "GET", "/workflows/"+first["execution_id"].(string)+"/children", nil)
		require.Equal(t, []any{}, leaf.Body["children"])
	})
	t.Run("SignalExternalThroughTheAPI", func(t *testing.T) {
		target := b.do(t, "POST", "/workflows/approval/start", map[string]any{})
		require.Equal(t, http.StatusCreated, target.Status, "%s", target.Raw)
		id := target.Body["execution_id"].(string)
		r := b.do(t, "POST", "/workflows/"+demo.ApproverName+"/start?wait=20s",
			map[string]any{"input": map[string]any{"order": id, "by": "ops"}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, "approved", r.Body["result"].(map[string]any)["output"], "%s", r.Raw)
		res, err := b.engine.Result(context.Background(), uuid.MustParse(id), 20*time.Second)
		require.NoError(t, err)
		require.JSONEq(t, `"ops"`, string(res.Output))
	})
	t.Run("AnswersMapToEngineErrors", func(t *testing.T) {
		out := &Outbound{}
		ctx := context.Background()
		_, err := out.Signal(ctx, engine.SignalRequest{ExecutionID: engine.NewExecutionID(3), SignalName: "go"})
		require.ErrorIs(t, err, errUnbound)
		require.False(t, engine.IsDefinite(err), "an unbound outbound is retried")
		out.Bind(b.server)
		_, err = out.Signal(ctx, engine.SignalRequest{ExecutionID: engine.NewExecutionID(3), SignalName: "go"})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = out.Start(ctx, engine.StartRequest{WorkflowName: "nope", IdempotencyKey: "hv:child:x:9"})
		require.ErrorIs(t, err, engine.ErrUnknownWorkflow)
		first, err := out.Start(ctx, engine.StartRequest{WorkflowName: "block", WorkflowID: "ob-1", IdempotencyKey: "hv:child:x:10"})
		require.NoError(t, err)
		again, err := out.Start(ctx, engine.StartRequest{WorkflowName: "block", WorkflowID: "ob-1", IdempotencyKey: "hv:child:x:10"})
		require.NoError(t, err)
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.True(t, again.Deduplicated)
		_, err = out.Start(ctx, engine.StartRequest{WorkflowName: "block", WorkflowID: "ob-1", IdempotencyKey: "hv:child:x:11",
			ConflictPolicy: engine.ConflictFail})
		var conflict *engine.ConflictError
		require.ErrorAs(t, err, &conflict)
		res, err := out.Terminate(ctx, first.ExecutionID, "test")
		require.NoError(t, err)
		require.True(t, res.Newly)
		_, err = out.Cancel(ctx, first.ExecutionID, "test")
		var terminal *engine.TerminalError
		require.ErrorAs(t, err, &terminal)
		require.True(t, engine.IsDefinite(err))
	})
	t.Run("ResolveFindsTheRunningRun", func(t *testing.T) {
		out := &Outbound{}
		ctx := context.Background()
		_, err := out.Resolve(ctx, "block", "ob-resolve")
		require.ErrorIs(t, err, errUnbound)
		out.Bind(b.server)
		_, err = out.Resolve(ctx, "block", "ob-resolve")
		require.ErrorIs(t, err, engine.ErrNotFound, "no run of the id")
		require.True(t, engine.IsDefinite(err))
		run, err := out.Start(ctx, engine.StartRequest{WorkflowName: "block", WorkflowID: "ob-resolve"})
		require.NoError(t, err)
		got, err := out.Resolve(ctx, "block", "ob-resolve")
		require.NoError(t, err)
		require.Equal(t, run.ExecutionID, got)
		_, err = out.Terminate(ctx, run.ExecutionID, "test")
		require.NoError(t, err)
		_, err = out.Resolve(ctx, "block", "ob-resolve")
		require.ErrorIs(t, err, engine.ErrNotFound, "its run closed")
		for name, id := range map[string]string{"": "x", "block": "", "bl\x00ck": "x", "block\x00": "x\xff"} {
			_, err = out.Resolve(ctx, name, id)
			require.ErrorIs(t, err, engine.ErrInvalidArgument, "%q %q", name, id)
		}
	})
}
