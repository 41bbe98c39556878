package engine

import (
	"context"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/outbox"
)

// Handles the engine's tests keep on what moved into its services.

// recordResolved records id as outbox row rowID's resolved target
// (outbox.RecordResolved on e's fence).
func (e *Engine) recordResolved(ctx context.Context, rowID int64, id uuid.UUID) (uuid.UUID, error) {
	return outbox.RecordResolved(ctx, e.fence, rowID, id)
}

// errOutboxGone is outbox.ErrGone.
var errOutboxGone = outbox.ErrGone
