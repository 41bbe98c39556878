package intake

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Resets (design-notes, "Reset").
//
// A reset replaces the current run of a chain by a new run that replays
// a prefix of one of the chain's runs (the source) and then runs the
// code as it is now. It adds no mechanism: it is a keyed start, under the
// claim key harvest.ResetKey(chain, idempotency key) of the workflow's
// name, whose new run is a hand-over of the current one
// (internal/runs/reset.go), all in one transaction:
//
//  1. the claim; a retry finds it (read-only, before any lock) and
//     answers the same new run;
//  2. the new run, in the same chain, with the source's events 0..E, its
//     WorkflowStarted carrying the key base (the source's key base, or
//     the source itself), the signals the source received after E (keys
//     included: their ledger rows are the chain's, so a redelivery stays
//     a duplicate), and what the prefix left pending armed again;
//  3. the current run closed TERMINATED when it was open (its slots,
//     timeout timers and completion callbacks go to the new run), its
//     continued_to the new run.
//
// A crash before the commit leaves nothing; after it, the claim answers.

// CrashReset: a reset before its commit.
const CrashReset loop.CrashPoint = "reset.before_commit"

// errResetRaced: a concurrent reset with the same key committed first.
var errResetRaced = errors.New("a concurrent reset with the same key committed first")

// Reset resets a run (see above). Errors: shardapi.ErrNotFound, a point
// that is not one or a run that cannot be reset (shardapi.ErrInvalidArgument),
// a *shardapi.ConflictError when another run holds the workflow id.
func (in *Intake) Reset(ctx context.Context, req shardapi.ResetRequest) (shardapi.ResetResult, error) {
	if err := in.d.Fence.CheckOwning(); err != nil {
		return shardapi.ResetResult{}, err
	}
	key := cmp.Or(req.IdempotencyKey, uuid.NewString())
	for try := 0; ; try++ {
		res, found, err := in.resetDone(ctx, req.ExecutionID, key)
		if err != nil || found {
			return res, err
		}
		res, err = in.resetTx(ctx, req, key)
		if !errors.Is(err, errResetRaced) || try > 0 {
			return res, err
		}
	}
}

// resetDone finds the reset of run id's chain under key: its answer, and
// whether there is one. It only reads.
func (in *Intake) resetDone(ctx context.Context, id uuid.UUID, key string) (shardapi.ResetResult, bool, error) {
	x, err := store.GetExecution(ctx, in.d.Pool, id)
	if err != nil {
		return shardapi.ResetResult{}, false, fmt.Errorf("execution %s: %w", id, store.Translate(err))
	}
	c, err := store.LookupClaim(ctx, in.d.Pool, x.WorkflowName, harvest.ResetKey(x.ChainID.String(), key), in.d.Window.Milliseconds())
	if errors.Is(err, pgx.ErrNoRows) {
		return shardapi.ResetResult{}, false, nil
	}
	if err != nil {
		return shardapi.ResetResult{}, false, fmt.Errorf("look up the reset claim: %w", err)
	}
	res, err := resetAnswer(ctx, in.d.Pool, c.ExecutionID)
	return res, err == nil, err
}

// resetAnswer is the answer of the reset that made run id, read back.
func resetAnswer(ctx context.Context, q store.Querier, id uuid.UUID) (shardapi.ResetResult, error) {
	x, err := store.GetExecution(ctx, q, id)
	if err != nil {
		return shardapi.ResetResult{}, err
	}
	h, err := store.LoadHistory(ctx, q, id, 0, 1)
	if err != nil || len(h) == 0 {
		return shardapi.ResetResult{}, fmt.Errorf("read the reset run %s: %w", id, cmp.Or(err, shardapi.ErrNotFound))
	}
	var d harvest.WorkflowStartedData
	if err := json.Unmarshal(h[0].Data, &d); err != nil {
		return shardapi.ResetResult{}, fmt.Errorf("decode WorkflowStarted of %s: %w", id, err)
	}
	from, _ := uuid.Parse(d.ResetFrom)
	res := shardapi.ResetResult{ExecutionID: id, WorkflowID: x.WorkflowID, ResetFrom: from, EventID: d.ResetEventID}
	if x.ContinuedFrom != nil {
		res.Replaced = *x.ContinuedFrom
		res.Terminated, err = terminatedBy(ctx, q, res.Replaced, id)
	}
	return res, err
}

// terminatedBy reports whether run replaced closed by the reset that made
// run by: its last event is a WorkflowTerminated naming it.
func terminatedBy(ctx context.Context, q store.Querier, replaced, by uuid.UUID) (bool, error) {
	r, err := store.GetExecution(ctx, q, replaced)
	if err != nil || r.State != shardapi.StateTerminated {
		return false, err
	}
	h, err := store.LoadHistory(ctx, q, replaced, r.EventCount-1, 1)
	if err != nil || len(h) == 0 || h[0].Type != harvest.EventWorkflowTerminated {
		return false, err
	}
	var d harvest.WorkflowClosedData
	_ = json.Unmarshal(h[0].Data, &d)
	return d.ReplacedBy == by.String(), nil
}

// resetTx makes the reset in one transaction.
func (in *Intake) resetTx(ctx context.Context, req shardapi.ResetRequest, key string) (shardapi.ResetResult, error) {
	var (
		res shardapi.ResetResult
		fx  runs.Effects
	)
	err := in.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		fx = runs.Effects{}
		r, err := in.resetRun(ctx, tx, req)
		if err != nil {
			return err
		}
		res = shardapi.ResetResult{ExecutionID: r.NewID, WorkflowID: r.Current.WorkflowID, ResetFrom: r.Source, EventID: r.Point,
			Replaced: r.Current.ID, Terminated: !shardapi.IsTerminal(r.Current.State), Newly: true}
		ch := runs.New()
		if err := ch.Reset(r, in.d.Route); err != nil {
			return err
		}
		claimed := true
		b := &pgx.Batch{}
		store.QueueClaimKey(b, r.Current.WorkflowName, harvest.ResetKey(r.Current.ChainID.String(), key), r.NewID,
			int(in.d.ShardID), in.d.Window.Milliseconds(), &claimed)
		if err := ch.Send(ctx, tx, b); err != nil {
			return err
		}
		if !claimed {
			return errResetRaced
		}
		fx = ch.Effects()
		return in.d.Crash.At(ctx, CrashReset)
	})
	if err != nil {
		return shardapi.ResetResult{}, err
	}
	in.d.Settle(ctx, fx, nil)
	return res, nil
}

// resetRun locks the source and the chain's current run, checks the
// reset may be made, and reads the source's history and the point.
func (in *Intake) resetRun(ctx context.Context, tx *fence.Tx, req shardapi.ResetRequest) (runs.ResetRun, error) {
	src, err := store.LockExec(ctx, tx, req.ExecutionID)
	if err != nil {
		return runs.ResetRun{}, err
	}
	if err := refuseSystem(src, "reset"); err != nil {
		return runs.ResetRun{}, err
	}
	cur, err := lockCurrentRun(ctx, tx, src)
	if err != nil {
		return runs.ResetRun{}, err
	}
	if err := resettable(ctx, tx, cur); err != nil {
		return runs.ResetRun{}, err
	}
	h, err := store.LoadHistory(ctx, tx, src.ID, 0, -1)
	if err != nil {
		return runs.ResetRun{}, fmt.Errorf("load the history of %s: %w", src.ID, err)
	}
	point, err := runs.ResetPoint(h, req.Point, req.EventID)
	if err != nil {
		return runs.ResetRun{}, err
	}
	reason := cmp.Or(req.Reason, fmt.Sprintf("reset to event %d of %s", point, src.ID))
	return runs.ResetRun{History: h, Point: point, NewID: shardapi.NewExecutionID(in.d.ShardID), Source: src.ID,
		KeyBase: keyBase(h[0], src.ID), Current: cur, Reason: reason}, nil
}

// resettable refuses a reset that would replace cur wrongly: a QUEUED run
// (its code never ran, and it holds no concurrency slot to hand over), a
// closed run under a concurrency limit (its slot is given back: the new
// run would run without one), or a closed run whose workflow id another
// run holds now.
func resettable(ctx context.Context, tx *fence.Tx, cur *store.Exec) error {
	switch {
	case cur.State == shardapi.StateQueued:
		return fmt.Errorf("run %s is queued: its code has not run yet: %w", cur.ID, shardapi.ErrInvalidArgument)
	case !shardapi.IsTerminal(cur.State):
		return nil
	}
	limited, err := store.FlowKeyed(ctx, tx, cur.ID)
	if err != nil {
		return fmt.Errorf("read the flow key of %s: %w", cur.ID, err)
	}
	if limited {
		return fmt.Errorf("run %s is closed and under a concurrency limit: reset it while it runs: %w", cur.ID, shardapi.ErrInvalidArgument)
	}
	holder, found, err := store.FindSlotHolder(ctx, tx, cur.WorkflowName, cur.WorkflowID)
	if err != nil {
		return fmt.Errorf("find the run holding workflow id %q: %w", cur.WorkflowID, err)
	}
	if found && holder != cur.ID {
		return &shardapi.ConflictError{ExistingExecutionID: holder.String(), ExistingState: shardapi.StateRunning}
	}
	return nil
}

// keyBase is the key base of a reset of the run whose WorkflowStarted is
// started: the run's own, or the run itself.
func keyBase(started harvest.Event, id uuid.UUID) string {
	var d harvest.WorkflowStartedData
	_ = json.Unmarshal(started.Data, &d)
	return cmp.Or(d.KeyBase, id.String())
}
