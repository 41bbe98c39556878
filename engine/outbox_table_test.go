package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/schedule"
)

// TestOutboxKindsTable checks that every kind the engine inserts has an
// entry in the table it builds.
func TestOutboxKindsTable(t *testing.T) {
	kinds := outboxKinds()
	for _, name := range []string{outbox.Signal, outbox.StartChild, outbox.ChildDone, outbox.CloseChild,
		schedule.OutboxKind, deferred.OutboxKind} {
		require.Contains(t, kinds, name)
	}
	require.Len(t, kinds, 6)
}
