package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/schedule"
	"github.com/harvestd/harvest/engine/internal/store"
)

// TestOutboxKindsTable checks that every kind the engine inserts has an
// entry in the table it builds.
func TestOutboxKindsTable(t *testing.T) {
	kinds := outboxKinds()
	for _, name := range []string{outbox.Signal, outbox.StartChild, outbox.ChildDone, outbox.CloseChild,
		schedule.OutboxKind, deferred.OutboxKind, store.FlowAcquireKind, store.FlowReleaseKind} {
		require.Contains(t, kinds, name)
	}
	require.Len(t, kinds, 8)
}
