package deferred

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// TestDeferredFireRefusals checks the fire kind's policy: which refusals
// end an item and which are retried.
func TestDeferredFireRefusals(t *testing.T) {
	gate, conflict := &shardapi.GateError{GateID: "g"}, &shardapi.ConflictError{ExistingExecutionID: "x"}
	schema, transient := &harvest.InputError{Workflow: "w"}, errors.New("unreachable")
	cases := []struct {
		err     error
		outcome string // "" for a retry
	}{
		{gate, ""},
		{conflict, shardapi.DeferredFailed},
		{schema, shardapi.DeferredFailed},
		{transient, ""},
	}
	for _, c := range cases {
		outcome, _, final := Refused(store.DeferredFire{}, c.err)
		require.Equal(t, c.outcome != "", final, "%v", c.err)
		require.Equal(t, c.outcome, outcome, "%v", c.err)
	}
}

// TestDeferredFireStart checks the start an item fires (a JSON null input
// is none).
func TestDeferredFireStart(t *testing.T) {
	require.Equal(t, shardapi.OutboundStart{WorkflowName: "w", WorkflowID: "id"},
		FireStart(store.DeferredFire{WorkflowName: "w", WorkflowID: "id", Input: []byte("null")}))
}

// TestDeferredFireRecords checks that an item's answer is one UPDATE of
// its item, and that a key naming no item records nothing.
func TestDeferredFireRecords(t *testing.T) {
	for key, want := range map[string]int{shardapi.DeferredKey(uuid.New()): 1, "hv:deferred:not-a-uuid": 0} {
		b := &pgx.Batch{}
		QueueOutcome(b, key, shardapi.DeferredStarted, "", uuid.NewString())
		require.Equal(t, want, b.Len(), key)
	}
}
