package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// harvestctl workflow children lists a parent's children, and describe
// shows them.
func TestWorkflowChildren(t *testing.T) {
	b := setup(t)
	started := b.okJSON(t, "workflow", "start", "parent_chain", "--input-json", `{"children":2,"activities":1}`)
	id := started["execution_id"].(string)
	res := b.okJSON(t, "workflow", "result", id, "--wait", "20s")
	require.Equal(t, "COMPLETED", res["state"], "result: %v", res)

	list := b.okJSON(t, "workflow", "children", id)
	children := list["children"].([]any)
	require.Len(t, children, 2)
	for i, c := range children {
		ch := c.(map[string]any)
		require.Equal(t, "COMPLETED", ch["state"], "%v", ch)
		require.Equal(t, "noop_chain", ch["workflow_name"])
		require.Equal(t, id+"-"+[]string{"1", "2"}[i], ch["workflow_id"])
		require.NotEmpty(t, ch["execution_id"])
	}

	table := b.ok(t, "workflow", "children", id)
	got := rows(table, "1")
	require.Len(t, got, 1, table)
	require.Equal(t, []string{"1", "noop_chain", id + "-1", "COMPLETED"}, got[0][:4])
	require.Equal(t, "terminate", got[0][5])

	require.Contains(t, b.ok(t, "workflow", "describe", id), "Children")
	empty := b.ok(t, "workflow", "children", children[0].(map[string]any)["execution_id"].(string))
	require.Contains(t, empty, "No children")
}
