package intake

import (
	"context"
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

// Group commit of signals.
//
// Concurrent signals of a shard share transactions: Signal hands its
// request to the engine's signal batcher, one goroutine that takes
// whatever signals are queued (up to signalBatchMax, never waiting for
// more) and runs them as one fenced transaction: the runs locked (in id
// order) and the keys looked up in the fence's round trip, every ledger
// row and SignalReceived in another, one commit. Per-request semantics are
// those of the single path (signalTx): a keyed duplicate — committed
// earlier or earlier in the same batch — is not delivered, a closed or
// unknown run is refused, and so is a signal its workflow does not
// declare (checked after the key lookup, so a duplicate is answered as
// one). A batch that fails as a whole sends each of its
// signals through the single path.

// signalBatchMax is the most signals one transaction delivers.
const signalBatchMax = 128

// SignalCall is one signal waiting for its batch.
type SignalCall struct {
	Req   shardapi.SignalRequest
	Reply chan SignalReply // buffered: the batcher never blocks on it
}

// SignalReply is the batch's answer to one signal.
type SignalReply struct {
	Res shardapi.SignalResult
	Err error
	// Single sends the signal through the single path.
	Single bool
}

// runSignalBatcher starts the signal batcher of this run of the engine.
func (in *Intake) runSignalBatcher(ctx context.Context) {
	g := loop.NewBatcher[*SignalCall](signalBatchMax)
	in.Signals.Store(g)
	in.d.Spawn(ctx, func(ctx context.Context) {
		g.Run(ctx, 1, func(calls []*SignalCall) {
			for i, r := range in.SignalBatch(ctx, calls) {
				calls[i].Reply <- r
			}
		})
	})
}

// groupSignal runs a signal through the batcher (alone when there is
// none). A caller whose ctx ends before the batcher takes its signal gets
// ctx.Err(); a taken signal gets its batch's answer.
func (in *Intake) groupSignal(ctx context.Context, req shardapi.SignalRequest) (shardapi.SignalResult, error) {
	g := in.Signals.Load()
	if g == nil {
		return in.SignalTx(ctx, req)
	}
	c := &SignalCall{Req: req, Reply: make(chan SignalReply, 1)}
	switch err := g.Submit(ctx, c); {
	case errors.Is(err, loop.ErrBatcherStopped):
		return in.SignalTx(ctx, req) // the single path says why
	case err != nil:
		return shardapi.SignalResult{}, err
	}
	r := <-c.Reply
	if r.Single {
		return in.SignalTx(ctx, req)
	}
	return r.Res, r.Err
}

// SignalBatch delivers the signals of calls in one transaction and answers
// each.
func (in *Intake) SignalBatch(ctx context.Context, calls []*SignalCall) []SignalReply {
	ctx, cancel := context.WithTimeout(ctx, in.d.LeaseTTL)
	defer cancel()
	var (
		ids     []uuid.UUID
		keyIDs  []uuid.UUID
		keys    []string
		exs     = make(map[uuid.UUID]*store.Exec, len(calls))
		seen    = make(map[store.ChainKey]bool)
		replies = make([]SignalReply, len(calls))
		ch      *runs.Changes
	)
	for _, c := range calls {
		ids = append(ids, c.Req.ExecutionID)
		if c.Req.IdempotencyKey != "" {
			keyIDs, keys = append(keyIDs, c.Req.ExecutionID), append(keys, c.Req.IdempotencyKey)
		}
	}
	queue := func(b *pgx.Batch) {
		store.QueueLockExecs(b, ids, exs)
		if len(keys) == 0 {
			return
		}
		store.QueueSignalKeysSeen(b, keyIDs, keys, seen)
	}
	err := in.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		if err := redirectSignals(ctx, tx, exs); err != nil {
			return err
		}
		b, ledger := &pgx.Batch{}, &store.SignalRows{}
		ch = runs.New()
		ch.Ahead = tx.Ahead()
		for i, c := range calls {
			replies[i] = in.queueSignal(ch, ledger, c.Req, exs, seen)
		}
		ledger.Queue(b)
		ch.Queue(b)
		if err := in.d.Crash.At(ctx, CrashSignal); err != nil {
			return err
		}
		if err := tx.CommitWith(ctx, b); err != nil {
			return fmt.Errorf("write: %w", store.Translate(err))
		}
		return nil
	})
	if err != nil {
		in.SignalRetries.Add(1)
		for i := range replies {
			replies[i] = SignalReply{Single: true}
		}
		return replies
	}
	for _, r := range replies {
		recordSignal(r.Res, r.Err)
	}
	in.d.Settle(ctx, ch.Effects(), nil)
	return replies
}

// queueSignal decides one signal of a batch and adds its writes to ch and
// ledger; seen gains its key, so that a repeat later in the batch is a
// duplicate. A signal the workflow does not accept adds nothing.
func (in *Intake) queueSignal(ch *runs.Changes, ledger *store.SignalRows, req shardapi.SignalRequest, exs map[uuid.UUID]*store.Exec, seen map[store.ChainKey]bool) SignalReply {
	res := shardapi.SignalResult{ExecutionID: req.ExecutionID}
	ex := exs[req.ExecutionID]
	if ex == nil {
		return SignalReply{Err: fmt.Errorf("execution %s: %w", req.ExecutionID, shardapi.ErrNotFound)}
	}
	k := store.ChainKey{Chain: ex.ChainID, Key: req.IdempotencyKey}
	if req.IdempotencyKey != "" && seen[k] {
		return SignalReply{Res: res}
	}
	if ex.ContinuedTo != nil {
		ex = exs[*ex.ContinuedTo] // redirectSignals put the chain's current run there
	}
	res.ExecutionID = ex.ID
	switch {
	case shardapi.IsTerminal(ex.State):
		return SignalReply{Err: &shardapi.TerminalError{ExecutionID: ex.ID.String(), State: ex.State}}
	}
	if err := in.d.Reg.ValidateSignal(ex.WorkflowName, req.SignalName, req.Payload); err != nil {
		return SignalReply{Err: err}
	}
	if req.IdempotencyKey != "" {
		seen[k] = true
	}
	ledger.Add(ex.ID, ex.ChainID, req.SignalName, req.IdempotencyKey, ex.NextEventID)
	cmd := harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{
		SignalName: req.SignalName, Payload: runs.InputOrNull(req.Payload), IdempotencyKey: req.IdempotencyKey})
	if req.SignalName == harvest.FlowGrantSignal {
		ch.GrantSlot(ex)
	}
	ch.AppendEvents(ex, []harvest.Command{cmd}, true)
	res.Delivered = true
	return SignalReply{Res: res}
}

// redirectSignals locks the current run of the chain of every run in exs
// that continued as new, and makes exs map each such run's successor to
// it (exs[*ex.ContinuedTo]), so that its signals land there. The keys were
// looked up by chain already: a signal of the same key that lands while
// this batch waits for a lock makes the ledger insert fail, and the batch
// then goes through the single path, which answers it as a duplicate.
func redirectSignals(ctx context.Context, tx *fence.Tx, exs map[uuid.UUID]*store.Exec) error {
	var continued []*store.Exec
	for _, ex := range exs {
		if ex.ContinuedTo != nil {
			continued = append(continued, ex)
		}
	}
	for _, ex := range continued {
		cur, err := lockCurrentRun(ctx, tx, ex)
		if err != nil {
			return err
		}
		if have, ok := exs[cur.ID]; ok {
			cur = have // locked by this batch already: one row, one event counter
		}
		exs[*ex.ContinuedTo], exs[cur.ID] = cur, cur
	}
	return nil
}
