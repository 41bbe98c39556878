package api

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// Resolve finds the running run of (workflowName, workflowID) for a
// signal sent to a workflow id: read only, it probes the shard the
// current placement epoch puts the id on and the shards earlier epochs
// inside the idempotency window put it on (a run started before a
// re-placement stays where it was placed), each here or at its owner over
// the signed node-to-node probe route, as the system identity. No running
// holder anywhere is a definite engine.ErrNotFound; a shard that cannot
// be asked is an error to retry (the holder may be there).
func (o *Outbound) Resolve(ctx context.Context, workflowName, workflowID string) (uuid.UUID, error) {
	s := o.s.Load()
	if s == nil {
		return uuid.Nil, errUnbound
	}
	if workflowName == "" || workflowID == "" {
		return uuid.Nil, fmt.Errorf("a workflow id target needs a workflow name and id: %w", engine.ErrInvalidArgument)
	}
	if err := checkRoutingKey(workflowName, workflowID, ""); err != nil {
		return uuid.Nil, fmt.Errorf("workflow id target: %s: %w", err.Error(), engine.ErrInvalidArgument)
	}
	p, err := s.router.Place(workflowName, workflowID)
	if err != nil {
		return uuid.Nil, fmt.Errorf("place workflow id: %w", err)
	}
	for _, shard := range append([]uint16{p.Shard}, p.Earlier...) {
		r, err := s.probeShard(ctx, systemIdentity, shard, workflowName, workflowID, "")
		if err != nil {
			return uuid.Nil, fmt.Errorf("probe shard %d for workflow id: %w", shard, err)
		}
		if r.Holder != nil && !engine.IsTerminal(r.Holder.State) {
			return r.Holder.ExecutionID, nil
		}
	}
	return engine.RunningHolder(workflowName, workflowID, engine.SlotHolder{}, false)
}
