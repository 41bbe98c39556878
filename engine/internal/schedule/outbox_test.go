package schedule

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/shardapi"
)

// TestScheduleFireRefusals checks the fire kind's policy under each overlap
// policy: which refusals end a fire (and how) and which are retried.
func TestScheduleFireRefusals(t *testing.T) {
	gate, conflict := &shardapi.GateError{GateID: "g"}, &shardapi.ConflictError{ExistingExecutionID: "x"}
	schema, transient := &harvest.InputError{Workflow: "w"}, errors.New("unreachable")
	cases := []struct {
		overlap string
		err     error
		outcome string // "" for a retry
	}{
		{shardapi.OverlapSkip, gate, FireSkipped},
		{shardapi.OverlapSkip, conflict, FireSkipped},
		{shardapi.OverlapBufferOne, gate, ""},
		{shardapi.OverlapBufferOne, conflict, ""},
		{shardapi.OverlapAllowAll, conflict, FireFailed},
		{shardapi.OverlapSkip, schema, ""},
		{shardapi.OverlapSkip, transient, ""},
	}
	for _, c := range cases {
		outcome, _, final := Refused(FireRequest{Overlap: c.overlap}, c.err)
		require.Equal(t, c.outcome != "", final, "%s %v", c.overlap, c.err)
		require.Equal(t, c.outcome, outcome, "%s %v", c.overlap, c.err)
	}
}

// TestScheduleFireStart checks the start a fire fires and its record.
func TestScheduleFireStart(t *testing.T) {
	require.Equal(t, shardapi.OutboundStart{WorkflowName: "w", WorkflowID: "id", ReusePolicy: shardapi.ReuseTerminateIfRunning,
		ConflictPolicy: shardapi.ConflictFail}, FireStart(FireRequest{WorkflowName: "w", WorkflowID: "id"}))
	b := &pgx.Batch{}
	QueueOutcome(b, "fire", FireStarted, "", "id")
	require.Equal(t, 1, b.Len())
}
