package engine

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// TestOutboxKindsTable checks that every kind the engine inserts has an
// entry in the table it builds.
func TestOutboxKindsTable(t *testing.T) {
	kinds := outboxKinds()
	for _, name := range []string{outbox.Signal, outbox.StartChild, outbox.ChildDone, outbox.CloseChild,
		outboxScheduleStart, outboxDeferredStart} {
		require.Contains(t, kinds, name)
	}
	require.Len(t, kinds, 6)
}

// TestOutboxKeyedStartRefusals checks each keyed-start kind's policy: which
// refusals end a fire (and how) and which are retried.
func TestOutboxKeyedStartRefusals(t *testing.T) {
	gate, conflict := &GateError{GateID: "g"}, &ConflictError{ExistingExecutionID: "x"}
	schema, transient := &harvest.InputError{Workflow: "w"}, errors.New("unreachable")
	fire := func(overlap string, err error) (string, string, bool) {
		return refusedFire(scheduleStartRequest{Overlap: overlap}, err)
	}
	item := func(_ string, err error) (string, string, bool) { return refusedDeferred(store.DeferredFire{}, err) }
	cases := []struct {
		refused func(string, error) (string, string, bool)
		overlap string
		err     error
		outcome string // "" for a retry
	}{
		{fire, OverlapSkip, gate, fireSkipped},
		{fire, OverlapSkip, conflict, fireSkipped},
		{fire, OverlapBufferOne, gate, ""},
		{fire, OverlapBufferOne, conflict, ""},
		{fire, OverlapAllowAll, conflict, fireFailed},
		{fire, OverlapSkip, schema, ""},
		{fire, OverlapSkip, transient, ""},
		{item, "", gate, ""},
		{item, "", conflict, DeferredFailed},
		{item, "", schema, DeferredFailed},
		{item, "", transient, ""},
	}
	for _, c := range cases {
		outcome, _, final := c.refused(c.overlap, c.err)
		require.Equal(t, c.outcome != "", final, "%s %v", c.overlap, c.err)
		require.Equal(t, c.outcome, outcome, "%s %v", c.overlap, c.err)
	}
}

// TestOutboxKeyedStartRequests checks the start each keyed-start kind fires.
func TestOutboxKeyedStartRequests(t *testing.T) {
	require.Equal(t, shardapi.OutboundStart{WorkflowName: "w", WorkflowID: "id", ReusePolicy: ReuseTerminateIfRunning,
		ConflictPolicy: ConflictFail}, scheduleStart(scheduleStartRequest{WorkflowName: "w", WorkflowID: "id"}))
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
