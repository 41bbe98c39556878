package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Atomic starts: all of a batch's starts or none.
//
// StartAtomic runs its starts as one start batch (groupcommit.go) in a
// transaction of its own, planned with atomic set: a start the batch
// would send through the single path (its workflow id has an open run, or
// another start of the batch has the same id) or that a newer placement
// epoch moved fails the whole transaction before anything is written, as
// does any start's failed fresh check before the transaction begins. A
// keyed start whose key has a live claim is answered with the claim's run,
// deduplicated, as a single start would be: a batch re-sent after a lost
// answer creates nothing and answers every start as before.

// StartAtomic starts every request of reqs, or none: see AtomicError. On
// success it answers each request in order.
func (e *Engine) StartAtomic(ctx context.Context, reqs []StartRequest) ([]StartResult, error) {
	if err := e.checkOwning(); err != nil {
		return nil, err
	}
	if len(reqs) == 0 || len(reqs) > MaxAtomicStarts {
		return nil, fmt.Errorf("an atomic batch holds 1 to %d starts, not %d: %w", MaxAtomicStarts, len(reqs), ErrInvalidArgument)
	}
	out := make([]StartResult, len(reqs))
	fresh, idx, err := e.prepareAtomic(ctx, reqs, out)
	if err != nil || len(fresh) == 0 {
		return e.answerAtomic(reqs, out, err)
	}
	res, err := e.commitAtomic(ctx, fresh)
	if err != nil {
		var ae *AtomicError
		if errors.As(err, &ae) {
			ae.Index = idx[ae.Index]
		}
		return nil, err
	}
	for j, i := range idx {
		out[i] = res[j]
	}
	return e.answerAtomic(reqs, out, nil)
}

// prepareAtomic answers the starts whose keys have a live claim (into out)
// and runs the fresh checks of the others: those, with their indexes.
func (e *Engine) prepareAtomic(ctx context.Context, reqs []StartRequest, out []StartResult) ([]StartRequest, []int, error) {
	var (
		fresh []StartRequest
		idx   []int
	)
	for i, req := range reqs {
		if req.WorkflowName == "" {
			return nil, nil, &AtomicError{Index: i, Err: fmt.Errorf("workflow name is empty: %w", ErrInvalidArgument)}
		}
		if req.IdempotencyKey != "" {
			res, ok, err := e.LookupStartKey(ctx, req.WorkflowName, req.IdempotencyKey)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				out[i] = res
				continue
			}
		}
		if err := e.freshChecks(ctx, &req); err != nil {
			return nil, nil, &AtomicError{Index: i, Err: err}
		}
		if req.WorkflowID == "" {
			req.WorkflowID, req.mintedID = uuid.NewString(), true
		}
		fresh, idx = append(fresh, req), append(idx, i)
	}
	return fresh, idx, nil
}

// commitAtomic commits reqs as one atomic start batch; a batch that lost a
// race with a concurrent start of one of its workflow ids is planned again
// (the race's winner is then an open run: a conflict).
func (e *Engine) commitAtomic(ctx context.Context, reqs []StartRequest) ([]StartResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := e.commitAtomicOnce(ctx, reqs)
		if errors.Is(err, ErrDuplicate) && attempt < maxSlotRaces {
			continue
		}
		return res, err
	}
}

func (e *Engine) commitAtomicOnce(runCtx context.Context, reqs []StartRequest) ([]StartResult, error) {
	ctx, cancel := context.WithTimeout(runCtx, e.cfg.LeaseTTL)
	defer cancel()
	p := newBatchPlan(reqs, e.cfg.ShardID)
	p.atomic = true
	replies, err := e.commitBatch(runCtx, ctx, p, e.sendTwoTrips)
	if err != nil {
		return nil, err
	}
	out := make([]StartResult, len(replies))
	for i, r := range replies {
		if r.single || r.err != nil {
			// A claim gone between the batch's claim and its read: it
			// cannot expire inside a transaction, so this is not seen.
			return nil, &AtomicError{Index: i, Err: cmpErr(r.err, fmt.Errorf("claim vanished: %w", ErrUnavailable))}
		}
		out[i] = r.res
	}
	return out, nil
}

// atomicRefusal is the AtomicError of the first start of an atomic plan
// that the batch cannot create or answer, nil when there is none.
func (p *batchPlan) atomicRefusal() error {
	for i, f := range p.fate {
		switch {
		case f == fateMoved:
			return &AtomicError{Index: i, Err: p.moved[i]}
		case f == fateSingle && p.holder[i]:
			return &AtomicError{Index: i, Err: fmt.Errorf("workflow id %q has an open run: %w", p.reqs[i].WorkflowID, ErrWorkflowIDBusy)}
		case f == fateSingle:
			return &AtomicError{Index: i, Err: fmt.Errorf("workflow id %q is used by another start of the batch: %w", p.reqs[i].WorkflowID, ErrInvalidArgument)}
		}
	}
	return nil
}

// answerAtomic records an atomic batch's outcome as StartWorkflow does.
func (e *Engine) answerAtomic(reqs []StartRequest, out []StartResult, err error) ([]StartResult, error) {
	if err != nil {
		return nil, err
	}
	for i, res := range out {
		recordStart(res, nil)
		if reqs[i].IdempotencyKey != "" {
			e.keys.add(reqs[i].WorkflowName, reqs[i].IdempotencyKey)
		}
	}
	return out, nil
}

// cmpErr is err, or other when err is nil.
func cmpErr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}
