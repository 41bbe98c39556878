package intake

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Handles the engine's end-to-end tests keep on the intake's internals
// (engine/export_test.go): nothing else calls them.

// Early is what a start's own goroutine prepared for a one-trip batch
// (PrepareEarly): the run's id, the time its first task ran at, and
// whether it ran to a result; all zero when nothing was prepared.
func Early(r StartRequest) (id uuid.UUID, at time.Time, ran bool) {
	if r.early == nil {
		return uuid.Nil, time.Time{}, false
	}
	return r.early.id, r.early.at, r.early.done()
}

// SendOneTripGivingUpSlots sends prepared starts as a one-trip batch
// whose first tasks are taken to have given every new run's slot up,
// which the slot index cannot check: the batch misses (ExpectHolding).
func (in *Intake) SendOneTripGivingUpSlots(ctx context.Context, reqs []StartRequest) error {
	return in.sendOneTrip(ctx, newBatchPlan(reqs, in.d.ShardID), func(runs *runColumns) (func(*pgx.Batch), error) {
		for i := range runs.holdsSlot {
			runs.holdsSlot[i] = false
		}
		return func(*pgx.Batch) {}, nil
	}, func() {})
}
