package engine

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/schedule"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// TestOutboxKindsTable checks that every kind the engine inserts has an
// entry in the table it builds.
func TestOutboxKindsTable(t *testing.T) {
	kinds := outboxKinds()
	for _, name := range []string{outbox.Signal, outbox.StartChild, outbox.ChildDone, outbox.CloseChild,
		schedule.OutboxKind, outboxDeferredStart} {
		require.Contains(t, kinds, name)
	}
	require.Len(t, kinds, 6)
}

// TestOutboxKeyedStartRefusals checks the deferred kind's policy: which
// refusals end an item and which are retried.
func TestOutboxKeyedStartRefusals(t *testing.T) {
	gate, conflict := &GateError{GateID: "g"}, &ConflictError{ExistingExecutionID: "x"}
	schema, transient := &harvest.InputError{Workflow: "w"}, errors.New("unreachable")
	cases := []struct {
		err     error
		outcome string // "" for a retry
	}{
		{gate, ""},
		{conflict, DeferredFailed},
		{schema, DeferredFailed},
		{transient, ""},
	}
	for _, c := range cases {
		outcome, _, final := refusedDeferred(store.DeferredFire{}, c.err)
		require.Equal(t, c.outcome != "", final, "%v", c.err)
		require.Equal(t, c.outcome, outcome, "%v", c.err)
	}
}

// TestOutboxKeyedStartRequests checks the start the deferred kind fires.
func TestOutboxKeyedStartRequests(t *testing.T) {
	require.Equal(t, shardapi.OutboundStart{WorkflowName: "w", WorkflowID: "id"},
		deferredStart(store.DeferredFire{WorkflowName: "w", WorkflowID: "id", Input: []byte("null")}))
}

// TestOutboxDeferredRecords checks that an item's answer is one UPDATE of
// its item, and that a key naming no item records nothing.
func TestOutboxDeferredRecords(t *testing.T) {
	for key, want := range map[string]int{DeferredKey(uuid.New()): 1, "hv:deferred:not-a-uuid": 0} {
		b := &pgx.Batch{}
		queueDeferredOutcome(b, key, DeferredStarted, "", uuid.NewString())
		require.Equal(t, want, b.Len(), key)
	}
}
