package engine

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/intake"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
)

// StartRequest starts a workflow run (internal/intake: it carries fields
// the intake resolves while the start goes through).
type StartRequest = intake.StartRequest

// SignalWithStartRequest signals the run holding a workflow id, starting
// one first when needed (internal/intake).
type SignalWithStartRequest = intake.SignalWithStartRequest

// newIntake makes the intake (internal/intake): starts, signals, cancels
// and terminates.
func (e *Engine) newIntake() *intake.Intake {
	return intake.New(intake.Deps{Service: e.service("intake"), Reg: e.reg, WF: e.wf,
		Reserve: func(n int) *runs.Direct { return e.act.Reserve(n) }, Route: outbox.Route, Watch: e.closed, Clock: &e.clock,
		Policy: e.cfg.CallbackPolicy, ShardID: e.cfg.ShardID, Window: e.cfg.IdempotencyWindow, LeaseTTL: e.cfg.LeaseTTL,
		StartBatchMax: e.cfg.StartBatchMax, Wake: e.bus.Workflow, Spawn: e.spawn, Limit: e.lim.Workflow})
}

// StartWorkflow starts a run, deduplicating by idempotency key first and
// then applying the reuse/conflict matrix to the run holding the workflow
// id. N concurrent starts with one key create exactly one run.
func (e *Engine) StartWorkflow(ctx context.Context, req StartRequest) (StartResult, error) {
	return e.in.StartWorkflow(ctx, req)
}

// StartAtomic starts every request of reqs, or none: see AtomicError. On
// success it answers each request in order.
func (e *Engine) StartAtomic(ctx context.Context, reqs []StartRequest) ([]StartResult, error) {
	return e.in.StartAtomic(ctx, reqs)
}

// LookupStartKey is the read-only replay probe: the run a live claim of
// (name, key) points to. ok is false when the key is unclaimed or expired.
func (e *Engine) LookupStartKey(ctx context.Context, name, key string) (StartResult, bool, error) {
	return e.in.LookupStartKey(ctx, name, key)
}

// KnownStartKey reports whether this engine has claimed the start key or
// answered a replay of it: a start with it is likely a replay.
func (e *Engine) KnownStartKey(name, key string) bool { return e.in.KnownStartKey(name, key) }

// LookupWorkflowID is the read-only probe for the run holding
// (name, workflowID) on this shard; ok is false when none does.
func (e *Engine) LookupWorkflowID(ctx context.Context, name, workflowID string) (SlotHolder, bool, error) {
	return e.in.LookupWorkflowID(ctx, name, workflowID)
}

// DrainStatus reads the shard's DrainStatus for the given window.
func (e *Engine) DrainStatus(ctx context.Context, window time.Duration) (DrainStatus, error) {
	return e.in.DrainStatus(ctx, window)
}

// ReadDrainStatus reads a DrainStatus straight from a shard database (any
// node can, without owning the shard: it only reads).
func ReadDrainStatus(ctx context.Context, q store.Querier, shard uint16, window time.Duration) (DrainStatus, error) {
	return intake.ReadDrainStatus(ctx, q, shard, window)
}

// ClaimPlacement is the cross-shard half of a start whose key an earlier
// placement epoch put on this shard (intake.Intake.ClaimPlacement).
func (e *Engine) ClaimPlacement(ctx context.Context, req ClaimRequest) (ClaimResult, error) {
	return e.in.ClaimPlacement(ctx, req)
}

// Signal appends one SignalReceived; a keyed duplicate reports
// Delivered=false (intake.Intake.Signal).
func (e *Engine) Signal(ctx context.Context, req SignalRequest) (SignalResult, error) {
	return e.in.Signal(ctx, req)
}

// SignalWithStart applies the signal-with-start matrix and delivers the
// signal in the same transaction.
func (e *Engine) SignalWithStart(ctx context.Context, req SignalWithStartRequest) (SignalWithStartResult, error) {
	return e.in.SignalWithStart(ctx, req)
}

// Cancel asks a running run to cancel (intake.Intake.Cancel).
func (e *Engine) Cancel(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return e.in.Cancel(ctx, id, reason)
}

// Terminate force-closes a run as TERMINATED and releases its workflow id.
// Terminating a closed run is a no-op (Newly=false).
func (e *Engine) Terminate(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return e.in.Terminate(ctx, id, reason)
}

// CloseGate stores (or replaces) a gate in one shard database.
func CloseGate(ctx context.Context, db store.Querier, g Gate) error {
	return intake.CloseGate(ctx, db, g)
}

// OpenGate deletes a gate from one shard database; false if it was absent.
func OpenGate(ctx context.Context, db store.Querier, id string) (bool, error) {
	return intake.OpenGate(ctx, db, id)
}

// ListGates reads the unexpired gates of one shard database.
func ListGates(ctx context.Context, db store.Querier) ([]Gate, error) {
	return intake.ListGates(ctx, db)
}

// InvalidateGates makes the next check re-read the gates (after this node
// changed them).
func (e *Engine) InvalidateGates() { e.in.InvalidateGates() }

// CloseGate closes gate in this shard's own database: the gate store of a
// one-shard deployment (a cluster writes every shard's database).
func (e *Engine) CloseGate(ctx context.Context, g Gate) error { return e.in.CloseGate(ctx, g) }

// OpenGate lifts gate id in this shard's own database.
func (e *Engine) OpenGate(ctx context.Context, id string) (bool, error) {
	return e.in.OpenGate(ctx, id)
}

// ListGates lists the gates in this shard's own database.
func (e *Engine) ListGates(ctx context.Context) ([]Gate, error) { return e.in.ListGates(ctx) }
