package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
)

// A debounced key's item is pending on shard 1 when shard 1 is drained:
// the item still fires there, once, with the last input it collected,
// while the key's next start opens an item on the shard the new catalog
// places the key on, which fires once too.
func TestDeferredSurvivesDrain(t *testing.T) {
	c := newRaftClusterWindows(t, 2, []time.Duration{time.Hour, time.Hour, time.Hour})
	key := keyOn(t, demo.NoopChainName, c.cat, 1, nil, 0)
	start := func(n int, activities int) string {
		t.Helper()
		r := call(t, c.nodes[n], "POST", "/workflows/"+demo.NoopChainName+"/start", map[string]any{
			"input": map[string]any{"activities": activities}, "debounce": map[string]any{"key": key, "window": "8s"}})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		return fmt.Sprint(r.Body["deferred_id"])
	}
	state := func(id string) map[string]any {
		t.Helper()
		r := call(t, c.nodes[2], "GET", "/deferred/"+id, nil)
		require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		return r.Body
	}
	first := start(0, 1)
	require.Equal(t, uint16(1), engine.ShardOf(uuid.MustParse(first)), "the item lives on the key's shard")
	require.Equal(t, first, start(1, 2), "a start through another node joins it")

	d := call(t, c.nodes[1], "POST", "/admin/shards/1/drain", nil)
	require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
	c.waitWritable(t, 1)
	require.Equal(t, "pending", state(first)["state"], "the drain began while the item was pending")
	second := start(2, 1)
	require.Equal(t, uint16(0), engine.ShardOf(uuid.MustParse(second)), "the key's new starts go to a writable shard")

	for _, id := range []string{first, second} {
		eventually(t, "deferred "+id+" started", 30*time.Second, func() bool { return state(id)["state"] == "started" })
		require.Equal(t, 1, c.runsCount(t, "idempotency_key = $1", engine.DeferredKeyPrefix+id), "one run for %s", id)
	}
	x := call(t, c.nodes[0], "GET", "/workflows/"+fmt.Sprint(state(first)["execution_id"]), nil)
	require.Equal(t, http.StatusOK, x.Status, "%v", x.Body)
	require.JSONEq(t, `{"activities": 2}`, mustJSON(t, x.Body["execution"].(map[string]any)["input"]), "the last input")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}
