package intake

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/harvestd/harvest/engine/shardapi"
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

// StartAtomic starts every request of reqs, or none: see shardapi.AtomicError. On
// success it answers each request in order.
func (in *Intake) StartAtomic(ctx context.Context, reqs []StartRequest) ([]shardapi.StartResult, error) {
	if err := in.d.Fence.CheckOwning(); err != nil {
		return nil, err
	}
	if len(reqs) == 0 || len(reqs) > shardapi.MaxAtomicStarts {
		return nil, fmt.Errorf("an atomic batch holds 1 to %d starts, not %d: %w", shardapi.MaxAtomicStarts, len(reqs), shardapi.ErrInvalidArgument)
	}
	out := make([]shardapi.StartResult, len(reqs))
	fresh, idx, err := in.prepareAtomic(ctx, reqs, out)
	if err != nil || len(fresh) == 0 {
		return in.answerAtomic(reqs, out, err)
	}
	res, err := in.commitAtomic(ctx, fresh)
	if err != nil {
		var ae *shardapi.AtomicError
		if errors.As(err, &ae) {
			ae.Index = idx[ae.Index]
		}
		return nil, err
	}
	for j, i := range idx {
		out[i] = res[j]
	}
	return in.answerAtomic(reqs, out, nil)
}

// prepareAtomic answers the starts whose keys have a live claim (into out)
// and runs the fresh checks of the others: those, with their indexes.
func (in *Intake) prepareAtomic(ctx context.Context, reqs []StartRequest, out []shardapi.StartResult) ([]StartRequest, []int, error) {
	var (
		fresh []StartRequest
		idx   []int
	)
	for i, req := range reqs {
		if req.WorkflowName == "" {
			return nil, nil, &shardapi.AtomicError{Index: i, Err: fmt.Errorf("workflow name is empty: %w", shardapi.ErrInvalidArgument)}
		}
		if req.IdempotencyKey != "" {
			res, ok, err := in.LookupStartKey(ctx, req.WorkflowName, req.IdempotencyKey)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				out[i] = res
				continue
			}
		}
		if err := in.FreshChecks(ctx, &req); err != nil {
			return nil, nil, &shardapi.AtomicError{Index: i, Err: err}
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
func (in *Intake) commitAtomic(ctx context.Context, reqs []StartRequest) ([]shardapi.StartResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := in.commitAtomicOnce(ctx, reqs)
		if errors.Is(err, shardapi.ErrDuplicate) && attempt < maxSlotRaces {
			continue
		}
		return res, err
	}
}

func (in *Intake) commitAtomicOnce(runCtx context.Context, reqs []StartRequest) ([]shardapi.StartResult, error) {
	ctx, cancel := context.WithTimeout(runCtx, in.d.LeaseTTL)
	defer cancel()
	p := newBatchPlan(reqs, in.d.ShardID)
	p.atomic = true
	replies, err := in.commitBatch(runCtx, ctx, p, in.sendTwoTrips)
	if err != nil {
		return nil, err
	}
	out := make([]shardapi.StartResult, len(replies))
	for i, r := range replies {
		if r.Single || r.Err != nil {
			// A claim gone between the batch's claim and its read: it
			// cannot expire inside a transaction, so this is not seen.
			return nil, &shardapi.AtomicError{Index: i, Err: cmpErr(r.Err, fmt.Errorf("claim vanished: %w", shardapi.ErrUnavailable))}
		}
		out[i] = r.Res
	}
	return out, nil
}

// atomicRefusal is the shardapi.AtomicError of the first start of an atomic plan
// that the batch cannot create or answer, nil when there is none.
func (p *batchPlan) atomicRefusal() error {
	for i, f := range p.fate {
		switch {
		case f == fateMoved:
			return &shardapi.AtomicError{Index: i, Err: p.moved[i]}
		case f == fateSingle && p.holder[i]:
			return &shardapi.AtomicError{Index: i, Err: fmt.Errorf("workflow id %q has an open run: %w", p.reqs[i].WorkflowID, shardapi.ErrWorkflowIDBusy)}
		case f == fateSingle:
			return &shardapi.AtomicError{Index: i, Err: fmt.Errorf("workflow id %q is used by another start of the batch: %w", p.reqs[i].WorkflowID, shardapi.ErrInvalidArgument)}
		}
	}
	return nil
}

// answerAtomic records an atomic batch's outcome as StartWorkflow does.
func (in *Intake) answerAtomic(reqs []StartRequest, out []shardapi.StartResult, err error) ([]shardapi.StartResult, error) {
	if err != nil {
		return nil, err
	}
	for i, res := range out {
		recordStart(res, nil)
		if reqs[i].IdempotencyKey != "" {
			in.keys.add(reqs[i].WorkflowName, reqs[i].IdempotencyKey)
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
