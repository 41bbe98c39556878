package engine

import (
	"context"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/activity"
	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/schedule"
)

// Handles the engine's tests keep on what moved into its services.

// recordResolved records id as outbox row rowID's resolved target
// (outbox.RecordResolved on e's fence).
func (e *Engine) recordResolved(ctx context.Context, rowID int64, id uuid.UUID) (uuid.UUID, error) {
	return outbox.RecordResolved(ctx, e.fence, rowID, id)
}

// errOutboxGone is outbox.ErrGone.
var errOutboxGone = outbox.ErrGone

// A schedule fire's outcomes, and the format of a nominal time in its
// keys and workflow ids (internal/schedule).
const (
	firePending   = schedule.FirePending
	fireStarted   = schedule.FireStarted
	fireSkipped   = schedule.FireSkipped
	nominalFormat = schedule.NominalFormat
)

// batchCloseTries bounds the batches one deferred start closes to make
// room (internal/deferred).
const batchCloseTries = deferred.BatchCloseTries

// A task token's prefix and its stored hash (internal/activity).
const taskTokenPrefix = activity.TokenPrefix

func hashToken(token string) []byte { return activity.HashToken(token) }
