package outbox

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// KeyedStart is a kind whose row fires a keyed start (the row's command
// id is the key) on behalf of no run and records how it ended in a table
// of its own: a schedule's fire, a deferred item. T is its rows' request.
// The engine fills one per such kind from what the kind's service exports.
type KeyedStart[T any] struct {
	// Start is the start a request fires (its key is set here).
	Start func(d T) shardapi.OutboundStart
	// Refused is the policy for a refused start: its final outcome and
	// reason (final true), or a retry of the start.
	Refused func(d T, err error) (outcome, reason string, final bool)
	// Queue queues the UPDATE that records an answer in the kind's
	// table, by the row's command id.
	Queue func(b *pgx.Batch, key, outcome, reason, executionID string)
	// Started and Failed are the outcomes recorded for a start that went
	// through and for a request that cannot be decoded.
	Started, Failed string
}

// fireAnswer is how a keyed start ended.
type fireAnswer struct {
	outcome     string // the kind's Started or Failed, or what Refused says
	reason      string
	executionID string
}

// Perform decodes the row's request, fires its keyed start and sorts the
// answer into a final one or a retry.
func (k KeyedStart[T]) Perform(ctx context.Context, d Deps, r store.OutboxRow) Answer {
	req, err := decodeRequest[T](r)
	if err != nil {
		return Answer{row: r, answer: err, fire: &fireAnswer{outcome: k.Failed, reason: err.Error()}}
	}
	start := k.Start(req)
	start.IdempotencyKey = r.CommandID
	res, err := d.Outbound.Start(ctx, start)
	if err == nil {
		return Answer{row: r, fire: &fireAnswer{outcome: k.Started, executionID: res.ExecutionID.String()}}
	}
	if outcome, reason, final := k.Refused(req, err); final {
		return Answer{row: r, answer: err, fire: &fireAnswer{outcome: outcome, reason: reason}}
	}
	return Answer{row: r, retry: err}
}

// Record queues the answer's record in the kind's table; ex is unused
// (the row belongs to no run).
func (k KeyedStart[T]) Record(b *pgx.Batch, _ *store.Exec, a Answer) error {
	if f := a.fire; f != nil {
		k.Queue(b, a.row.CommandID, f.outcome, f.reason, f.executionID)
	}
	return nil
}
