package intake

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A minted workflow id is a fresh random UUID: no run can hold its slot,
// so a batch looks up only the slots of ids that were given.
func TestBatchLooksUpOnlyGivenWorkflowIDs(t *testing.T) {
	t.Parallel()
	p := newBatchPlan([]StartRequest{
		{WorkflowName: "w", WorkflowID: uuid.NewString(), mintedID: true, IdempotencyKey: "a"},
		{WorkflowName: "w", WorkflowID: "order-1", IdempotencyKey: "b"},
		{WorkflowName: "w", WorkflowID: uuid.NewString(), mintedID: true},
	}, 7)
	c := p.columns()
	require.Equal(t, []string{"order-1"}, c.wids)
	require.Equal(t, []string{"a", "b"}, c.keys)
}
