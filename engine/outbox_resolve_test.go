package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
)

type sendByIDInput struct {
	Workflow   string `json:"workflow"`
	WorkflowID string `json:"workflow_id"`
	Value      string `json:"value"`
}

// sendByIDWF signals a workflow id and says how the send ended.
var sendByIDWF = harvest.NewWorkflow("send_by_id", func(ctx harvest.Context, in sendByIDInput) (string, error) {
	_, err := harvest.SignalExternalWorkflow(ctx, in.Workflow, in.WorkflowID, itemSig, in.Value).Get(ctx)
	var refused *harvest.ExternalSignalError
	if errors.As(err, &refused) {
		return "refused:" + refused.Info.Type + ":" + refused.ExecutionID, nil
	}
	return "sent", err
})

func TestSignalExternalWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.reg.Register(sendByIDWF))
	e := b.engine(t)
	send := func(t *testing.T, workflow, id string) (uuid.UUID, Execution) {
		t.Helper()
		sender := start(t, e, StartRequest{WorkflowName: "send_by_id", Input: raw(t, sendByIDInput{Workflow: workflow, WorkflowID: id, Value: "x"})})
		return sender.ExecutionID, waitClosed(t, e, sender.ExecutionID)
	}

	t.Run("the running run gets it once", func(t *testing.T) {
		target := start(t, e, StartRequest{WorkflowName: "collect", WorkflowID: "by-id-running"})
		sender, x := send(t, "collect", "by-id-running")
		require.JSONEq(t, `"sent"`, string(x.Output))
		require.Equal(t, []string{harvest.ExternalSignalKey(sender.String(), "1")}, signalKeys(t, b.pool, target.ExecutionID))
		d := eventData[harvest.ExternalSignalDeliveredData](t, b.pool, sender, harvest.EventExternalSignalDelivered)
		require.Equal(t, target.ExecutionID.String(), d.ExecutionID, "the delivery names the run resolved to")
		requireOutboxEmpty(t, b.pool)
	})
	t.Run("no run of the id is not found", func(t *testing.T) {
		_, x := send(t, "collect", "by-id-never-started")
		require.JSONEq(t, `"refused:not_found:"`, string(x.Output))
	})
	t.Run("a closed holder is not found", func(t *testing.T) {
		done := start(t, e, StartRequest{WorkflowName: "noop", WorkflowID: "by-id-closed", Input: raw(t, "x")})
		waitClosed(t, e, done.ExecutionID)
		_, x := send(t, "noop", "by-id-closed")
		require.JSONEq(t, `"refused:not_found:"`, string(x.Output))
	})
	t.Run("another workflow's id is not found", func(t *testing.T) {
		start(t, e, StartRequest{WorkflowName: "collect", WorkflowID: "by-id-other-name"})
		_, x := send(t, "block", "by-id-other-name")
		require.JSONEq(t, `"refused:not_found:"`, string(x.Output))
	})
}

// TestSignalExternalWorkflowKeepsItsResolution crashes the sender's
// engine once the workflow id resolved (recorded, not sent), closes that
// run and starts another with the same id: the retry signals the run it
// resolved to first (closed now: refused), never the new one.
func TestSignalExternalWorkflowKeepsItsResolution(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.reg.Register(sendByIDWF))
	hit, frozen := make(chan struct{}), make(chan struct{})
	e1 := b.engine(t, func(c *Config) { c.crashHook = crashOnce(crashOutboxResolved, hit, frozen) })
	first := start(t, e1, StartRequest{WorkflowName: "collect", WorkflowID: "moving-id"})
	sender := start(t, e1, StartRequest{WorkflowName: "send_by_id", Input: raw(t, sendByIDInput{Workflow: "collect", WorkflowID: "moving-id", Value: "x"})})
	select {
	case <-hit:
	case <-time.After(20 * time.Second):
		t.Fatal("the send never resolved")
	}
	crash(e1)
	close(frozen)
	require.Equal(t, first.ExecutionID.String(), resolvedOf(t, b.pool, sender.ExecutionID), "recorded before the signal")

	gate, counted := make(chan struct{}), &countingOutbound{}
	e2 := b.engine(t, func(c *Config) { c.crashHook, c.Outbound = holdOutbox(gate), counted })
	counted.e.Store(e2)
	_, err := e2.Terminate(ctxT(t), first.ExecutionID, "replaced")
	require.NoError(t, err)
	second := start(t, e2, StartRequest{WorkflowName: "collect", WorkflowID: "moving-id"})
	require.NotEqual(t, first.ExecutionID, second.ExecutionID)
	close(gate)

	x := waitClosed(t, e2, sender.ExecutionID)
	require.JSONEq(t, `"refused:execution_terminal:`+first.ExecutionID.String()+`"`, string(x.Output))
	require.Empty(t, signalKeys(t, b.pool, second.ExecutionID), "the new run of the id is not signalled")
	require.Zero(t, counted.resolves.Load(), "the retry reads the recorded run, it does not resolve again")
	requireOutboxEmpty(t, b.pool)
}

func TestRecordResolvedKeepsTheFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	ctx := ctxT(t)
	var rowID int64
	require.NoError(t, b.pool.QueryRow(ctx, `
		INSERT INTO harvest_outbox (execution_id, command_id, kind, request, due_at)
		VALUES ($1, '1', 'signal', '{"workflow_id":"w"}', now() + interval '1 hour') RETURNING outbox_id`, uuid.New()).Scan(&rowID))
	a, c := uuid.New(), uuid.New()
	got, err := e.recordResolved(ctx, rowID, a)
	require.NoError(t, err)
	require.Equal(t, a, got)
	got, err = e.recordResolved(ctx, rowID, c)
	require.NoError(t, err)
	require.Equal(t, a, got, "a racing attempt signals the run recorded first")
	_, err = e.recordResolved(ctx, rowID+1, c)
	require.ErrorIs(t, err, errOutboxGone)
}

// countingOutbound is the engine's own Outbound, counting resolutions.
type countingOutbound struct {
	e        atomic.Pointer[Engine]
	resolves atomic.Int32
}

func (c *countingOutbound) self() selfOutbound { return selfOutbound{c.e.Load()} }

func (c *countingOutbound) Start(ctx context.Context, req StartRequest) (StartResult, error) {
	return c.self().Start(ctx, req)
}

func (c *countingOutbound) Signal(ctx context.Context, req SignalRequest) (SignalResult, error) {
	return c.self().Signal(ctx, req)
}

func (c *countingOutbound) Cancel(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return c.self().Cancel(ctx, id, reason)
}

func (c *countingOutbound) Terminate(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return c.self().Terminate(ctx, id, reason)
}

func (c *countingOutbound) Resolve(ctx context.Context, name, workflowID string) (uuid.UUID, error) {
	c.resolves.Add(1)
	return c.self().Resolve(ctx, name, workflowID)
}

// holdOutbox holds every outbox claim until gate is closed.
func holdOutbox(gate <-chan struct{}) loop.Crash {
	return func(ctx context.Context, p loop.CrashPoint) error {
		if p != crashOutboxClaimed {
			return nil
		}
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// resolvedOf is the run the outbox row of run id's send recorded.
func resolvedOf(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) string {
	t.Helper()
	var got *string
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT request->>'resolved_execution_id' FROM harvest_outbox WHERE execution_id = $1 AND kind = 'signal'`, id).Scan(&got))
	require.NotNil(t, got)
	return *got
}

// eventData decodes the one event of typ of run id.
func eventData[T any](t *testing.T, pool *pgxpool.Pool, id uuid.UUID, typ harvest.EventType) T {
	t.Helper()
	var raw []byte
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT data FROM harvest_events WHERE execution_id = $1 AND event_type = $2`, id, string(typ)).Scan(&raw))
	var v T
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func (c *countingOutbound) List(ctx context.Context, q ListQuery) (ListPage, error) {
	return c.self().List(ctx, q)
}

func (c *countingOutbound) Reset(ctx context.Context, req ResetRequest) (ResetResult, error) {
	return c.self().Reset(ctx, req)
}
