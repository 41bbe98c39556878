package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
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
// unknown run is refused. A batch that fails as a whole sends each of its
// signals through the single path.

// signalBatchMax is the most signals one transaction delivers.
const signalBatchMax = 128

// signalBatcher is the signal batcher of one Start..Stop.
type signalBatcher struct {
	in   chan *signalCall // unbuffered: a received call is taken
	done chan struct{}    // closed when the batcher has exited
}

// signalCall is one signal waiting for its batch.
type signalCall struct {
	req   SignalRequest
	reply chan signalReply // buffered: the batcher never blocks on it
}

type signalReply struct {
	res SignalResult
	err error
	// single sends the signal through the single path.
	single bool
}

// runSignalBatcher starts the signal batcher of this run of the engine.
func (e *Engine) runSignalBatcher(ctx context.Context) {
	g := &signalBatcher{in: make(chan *signalCall), done: make(chan struct{})}
	e.signals.Store(g)
	e.spawn(ctx, func(ctx context.Context) { e.batchSignals(ctx, g) })
}

// groupSignal runs a signal through the batcher (alone when there is
// none). A caller whose ctx ends before the batcher takes its signal gets
// ctx.Err(); a taken signal gets its batch's answer.
func (e *Engine) groupSignal(ctx context.Context, req SignalRequest) (SignalResult, error) {
	g := e.signals.Load()
	if g == nil {
		return e.signalTx(ctx, req)
	}
	c := &signalCall{req: req, reply: make(chan signalReply, 1)}
	select {
	case g.in <- c:
	case <-ctx.Done():
		return SignalResult{}, ctx.Err()
	case <-g.done:
		return e.signalTx(ctx, req) // stopped: the single path says so
	}
	r := <-c.reply
	if r.single {
		return e.signalTx(ctx, req)
	}
	return r.res, r.err
}

// batchSignals is the batcher loop: take what is queued, commit it, repeat.
func (e *Engine) batchSignals(ctx context.Context, g *signalBatcher) {
	defer close(g.done)
	calls := make([]*signalCall, 0, signalBatchMax)
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-g.in:
			calls = append(calls[:0], c)
		}
	fill:
		for len(calls) < signalBatchMax {
			select {
			case c := <-g.in:
				calls = append(calls, c)
			default:
				break fill
			}
		}
		for i, r := range e.signalBatch(ctx, calls) {
			calls[i].reply <- r
		}
		clear(calls)
	}
}

type execKey struct {
	id  uuid.UUID
	key string
}

// signalBatch delivers the signals of calls in one transaction and answers
// each.
func (e *Engine) signalBatch(ctx context.Context, calls []*signalCall) []signalReply {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.LeaseTTL)
	defer cancel()
	var (
		ids       []uuid.UUID
		keyIDs    []uuid.UUID
		keys      []string
		exs       = make(map[uuid.UUID]*execRow, len(calls))
		seen      = make(map[execKey]bool)
		replies   = make([]signalReply, len(calls))
		delivered bool
	)
	for _, c := range calls {
		ids = append(ids, c.req.ExecutionID)
		if c.req.IdempotencyKey != "" {
			keyIDs, keys = append(keyIDs, c.req.ExecutionID), append(keys, c.req.IdempotencyKey)
		}
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	ids = slices.Compact(ids)
	queue := func(b *pgx.Batch) {
		b.Queue(`
			SELECT execution_id, workflow_name, workflow_id, state, next_event_id, created_at
			  FROM harvest_executions WHERE execution_id = ANY($1) ORDER BY execution_id FOR UPDATE`, ids).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					r := &execRow{}
					if err := rows.Scan(&r.ID, &r.WorkflowName, &r.WorkflowID, &r.State, &r.NextEventID, &r.CreatedAt); err != nil {
						return err
					}
					exs[r.ID] = r
				}
				return rows.Err()
			})
		if len(keys) == 0 {
			return
		}
		b.Queue(`
			SELECT s.execution_id, s.idempotency_key
			  FROM unnest($1::uuid[], $2::text[]) AS r(id, k)
			  JOIN harvest_signals s ON s.execution_id = r.id AND s.idempotency_key = r.k`, keyIDs, keys).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var k execKey
					if err := rows.Scan(&k.id, &k.key); err != nil {
						return err
					}
					seen[k] = true
				}
				return rows.Err()
			})
	}
	err := e.withFencedBatch(ctx, queue, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		delivered = false
		for i, c := range calls {
			replies[i] = e.queueSignal(b, c.req, exs, seen)
			delivered = delivered || replies[i].res.Delivered
		}
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		for i := range replies {
			replies[i] = signalReply{single: true}
		}
		return replies
	}
	for _, r := range replies {
		recordSignal(r.res, r.err)
	}
	if delivered {
		e.nudge(e.wfWake)
	}
	return replies
}

// queueSignal decides one signal of a batch and queues its writes; seen
// gains its key, so that a repeat later in the batch is a duplicate.
func (e *Engine) queueSignal(b *pgx.Batch, req SignalRequest, exs map[uuid.UUID]*execRow, seen map[execKey]bool) signalReply {
	res := SignalResult{ExecutionID: req.ExecutionID}
	ex := exs[req.ExecutionID]
	k := execKey{req.ExecutionID, req.IdempotencyKey}
	switch {
	case ex == nil:
		return signalReply{err: fmt.Errorf("execution %s: %w", req.ExecutionID, ErrNotFound)}
	case req.IdempotencyKey != "" && seen[k]:
		return signalReply{res: res}
	case IsTerminal(ex.State):
		return signalReply{err: &TerminalError{ExecutionID: ex.ID.String(), State: ex.State}}
	}
	if req.IdempotencyKey != "" {
		seen[k] = true
	}
	b.Queue(`
		INSERT INTO harvest_signals (execution_id, signal_name, idempotency_key, event_id)
		VALUES ($1, $2, $3, $4)`, ex.ID, req.SignalName, nullString(req.IdempotencyKey), ex.NextEventID)
	cmd := harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{
		SignalName: req.SignalName, Payload: inputOrNull(req.Payload), IdempotencyKey: req.IdempotencyKey})
	queueAppendEvents(b, ex, []harvest.Command{cmd}, true)
	res.Delivered = true
	return signalReply{res: res}
}
