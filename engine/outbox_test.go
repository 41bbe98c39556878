package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// Workflows of the outbox tests.
type sendInput struct {
	Target string `json:"target"`
	Value  string `json:"value"`
}

type parentInput struct {
	Child  string `json:"child"` // "echo", "fail", "block", "slow"
	Input  string `json:"input"`
	Policy string `json:"policy"`
	// Return: return once the child started (close policies) instead of
	// waiting for its result.
	Return     bool  `json:"return"`
	TimeoutMS  int64 `json:"timeout_ms"`
	WorkflowID string
}

var (
	sendWF = harvest.NewWorkflow("send_external", func(ctx harvest.Context, in sendInput) (string, error) {
		_, err := harvest.SignalExternal(ctx, in.Target, itemSig, in.Value).Get(ctx)
		var refused *harvest.ExternalSignalError
		if errors.As(err, &refused) {
			return "refused:" + refused.Info.Type, nil
		}
		return "sent", err
	})
	// casChildWF continues as new until its input has three x's.
	casChildWF = harvest.NewWorkflow("child_cas", func(ctx harvest.Context, in string) (string, error) {
		if len(in) < 3 {
			return "", harvest.ContinueAsNew(ctx, in+"x")
		}
		return in, nil
	})
	casParentWF = harvest.NewWorkflow("parent_cas", func(ctx harvest.Context, _ string) (string, error) {
		return casChildWF.Execute(ctx, "").Get(ctx)
	})
	echoChildWF = harvest.NewWorkflow("child_echo", func(ctx harvest.Context, in string) (string, error) {
		return "echo:" + in + ":" + ctx.Info().WorkflowID, nil
	})
	parentWF = harvest.NewWorkflow("parent", func(ctx harvest.Context, in parentInput) (string, error) {
		opts := harvest.ChildOptions{WorkflowID: in.WorkflowID, ParentClosePolicy: harvest.ParentClosePolicy(in.Policy),
			ExecutionTimeout: time.Duration(in.TimeoutMS) * time.Millisecond}
		var f harvest.ChildFuture[string]
		switch in.Child {
		case "fail":
			f = failWF.Execute(ctx, in.Input, opts)
		case "block":
			f = blockWF.Execute(ctx, in.Input, opts)
		default:
			f = echoChildWF.Execute(ctx, in.Input, opts)
		}
		started, err := f.Started(ctx)
		if err != nil || in.Return {
			return started.ExecutionID, err
		}
		out, err := f.Get(ctx)
		var childErr *harvest.ChildWorkflowError
		if errors.As(err, &childErr) {
			return "child " + childErr.State + ": " + childErr.Info.Type, nil
		}
		return out, err
	})
)

func (b *testBundle) registerOutboxWorkflows(t *testing.T) {
	require.NoError(t, b.reg.Register(sendWF, echoChildWF, parentWF, casChildWF, casParentWF))
}

func TestSignalExternal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.registerOutboxWorkflows(t)
	e := b.engine(t)

	t.Run("delivered once, future resolves", func(t *testing.T) {
		target := start(t, e, StartRequest{WorkflowName: "collect"})
		sender := start(t, e, StartRequest{WorkflowName: "send_external", Input: raw(t, sendInput{Target: target.ExecutionID.String(), Value: "x"})})
		x := waitClosed(t, e, sender.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, `"sent"`, string(x.Output))
		require.Equal(t, 1, countOf(b.pool, target.ExecutionID, harvest.EventSignalReceived))
		require.Equal(t, harvest.ExternalSignalKey(sender.ExecutionID.String(), "1"), signalKeys(t, b.pool, target.ExecutionID)[0])
		require.Equal(t, 1, countOf(b.pool, sender.ExecutionID, harvest.EventExternalSignalDelivered))
		requireOutboxEmpty(t, b.pool)
	})
	t.Run("a closed target fails the future", func(t *testing.T) {
		target := start(t, e, StartRequest{WorkflowName: "noop", Input: raw(t, "x")})
		waitClosed(t, e, target.ExecutionID)
		sender := start(t, e, StartRequest{WorkflowName: "send_external", Input: raw(t, sendInput{Target: target.ExecutionID.String()})})
		x := waitClosed(t, e, sender.ExecutionID)
		require.JSONEq(t, `"refused:execution_terminal"`, string(x.Output))
		require.Equal(t, 1, countOf(b.pool, sender.ExecutionID, harvest.EventExternalSignalFailed))
	})
	t.Run("a missing target fails the future", func(t *testing.T) {
		sender := start(t, e, StartRequest{WorkflowName: "send_external", Input: raw(t, sendInput{Target: NewExecutionID(7).String()})})
		x := waitClosed(t, e, sender.ExecutionID)
		require.JSONEq(t, `"refused:not_found"`, string(x.Output))
	})
	t.Run("a target that is not an execution id fails the future", func(t *testing.T) {
		sender := start(t, e, StartRequest{WorkflowName: "send_external", Input: raw(t, sendInput{Target: "nope"})})
		x := waitClosed(t, e, sender.ExecutionID)
		require.JSONEq(t, `"refused:refused"`, string(x.Output))
	})
}

func TestChildWorkflows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.registerOutboxWorkflows(t)
	e := b.engine(t)

	t.Run("the parent gets the child's result, one child", func(t *testing.T) {
		p := start(t, e, StartRequest{WorkflowName: "parent", Input: raw(t, parentInput{Input: "hi"})})
		x := waitClosed(t, e, p.ExecutionID)
		require.Equal(t, StateCompleted, x.State, x.LastError)
		require.JSONEq(t, `"echo:hi:`+p.ExecutionID.String()+`-1"`, string(x.Output))
		children := childRuns(t, b.pool, p.ExecutionID)
		require.Len(t, children, 1)
		types := eventTypes(t, b.pool, p.ExecutionID)
		require.Equal(t, 1, count(types, harvest.EventChildWorkflowInitiated))
		require.Equal(t, 1, count(types, harvest.EventSignalReceived))
		requireOutboxEmpty(t, b.pool)
	})
	t.Run("a child that continues as new reports once, from its chain's end", func(t *testing.T) {
		p := start(t, e, StartRequest{WorkflowName: "parent_cas"})
		x := waitClosed(t, e, p.ExecutionID)
		require.Equal(t, StateCompleted, x.State, x.LastError)
		require.JSONEq(t, `"xxx"`, string(x.Output))
		children := childRuns(t, b.pool, p.ExecutionID)
		require.Len(t, children, 1, "one child chain")
		require.Equal(t, []string{harvest.ChildDoneKey(children[0].String())}, signalKeys(t, b.pool, p.ExecutionID))
	})
	t.Run("the child's failure reaches the parent typed", func(t *testing.T) {
		p := start(t, e, StartRequest{WorkflowName: "parent", Input: raw(t, parentInput{Child: "fail"})})
		x := waitClosed(t, e, p.ExecutionID)
		require.JSONEq(t, `"child FAILED: bad"`, string(x.Output))
	})
	t.Run("the child's timeout reaches the parent typed", func(t *testing.T) {
		p := start(t, e, StartRequest{WorkflowName: "parent", Input: raw(t, parentInput{Child: "block", TimeoutMS: 200})})
		x := waitClosed(t, e, p.ExecutionID)
		require.JSONEq(t, `"child TIMED_OUT: timeout"`, string(x.Output))
	})
	t.Run("the child's termination reaches the parent typed", func(t *testing.T) {
		p := start(t, e, StartRequest{WorkflowName: "parent", Input: raw(t, parentInput{Child: "block"})})
		child := waitChild(t, b.pool, p.ExecutionID)
		_, err := e.Terminate(ctxT(t), child, "test")
		require.NoError(t, err)
		x := waitClosed(t, e, p.ExecutionID)
		require.JSONEq(t, `"child TERMINATED: "`, string(x.Output))
	})
	t.Run("a workflow id held by a running run fails the start", func(t *testing.T) {
		holder := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "held"})
		p := start(t, e, StartRequest{WorkflowName: "parent", Input: raw(t, parentInput{Child: "block", WorkflowID: "held"})})
		x := waitClosed(t, e, p.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Contains(t, string(x.Error), "START_FAILED")
		require.Equal(t, 1, countOf(b.pool, p.ExecutionID, harvest.EventChildWorkflowStartFailed))
		_, err := e.Terminate(ctxT(t), holder.ExecutionID, "cleanup")
		require.NoError(t, err)
	})
}

func TestParentClosePolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.registerOutboxWorkflows(t)
	e := b.engine(t)
	for _, tc := range []struct {
		policy string
		want   string
	}{
		{"", StateTerminated},
		{"terminate", StateTerminated},
		{"request_cancel", StateCancelled},
		{"abandon", StateRunning},
	} {
		t.Run("policy "+tc.policy, func(t *testing.T) {
			p := start(t, e, StartRequest{WorkflowName: "parent", Input: raw(t, parentInput{Child: "block", Policy: tc.policy, Return: true})})
			x := waitClosed(t, e, p.ExecutionID)
			require.Equal(t, StateCompleted, x.State, x.LastError)
			child := uuid.MustParse(jsonString(t, x.Output))
			if tc.want == StateRunning {
				requireOutboxEmptyEventually(t, b.pool)
				got, err := e.GetExecution(ctxT(t), child)
				require.NoError(t, err)
				require.Equal(t, StateRunning, got.State)
				return
			}
			require.Equal(t, tc.want, waitClosed(t, e, child).State)
			requireOutboxEmptyEventually(t, b.pool)
		})
	}
}

func jsonString(t *testing.T, raw []byte) string {
	t.Helper()
	s := string(raw)
	require.True(t, len(s) >= 2 && s[0] == '"', s)
	return s[1 : len(s)-1]
}

// childRuns lists the runs started under a child key of parent.
func childRuns(t *testing.T, pool *pgxpool.Pool, parent uuid.UUID) []uuid.UUID {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT execution_id FROM harvest_executions WHERE idempotency_key LIKE $1`,
		"hv:child:"+parent.String()+":%")
	require.NoError(t, err)
	defer rows.Close()
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	return ids
}

// waitChild waits for the parent's first child to exist.
func waitChild(t *testing.T, pool *pgxpool.Pool, parent uuid.UUID) uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	eventually(t, "a child", func() bool { ids = childRuns(t, pool, parent); return len(ids) > 0 })
	return ids[0]
}

func signalKeys(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT idempotency_key FROM harvest_signals WHERE execution_id = $1 ORDER BY signal_id`, id)
	require.NoError(t, err)
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k *string
		require.NoError(t, rows.Scan(&k))
		if k != nil {
			keys = append(keys, *k)
		}
	}
	return keys
}

func outboxLen(pool *pgxpool.Pool) int {
	var n int
	_ = pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_outbox`).Scan(&n)
	return n
}

func requireOutboxEmpty(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	requireOutboxEmptyEventually(t, pool)
}

func requireOutboxEmptyEventually(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	eventually(t, "an empty outbox", func() bool { return outboxLen(pool) == 0 })
}
