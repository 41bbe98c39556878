package node

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sseEvent is one event of a stream as a client reads it.
type sseEvent struct {
	name, id, data string
}

// readSSE reads the next event (comments skipped).
func readSSE(t *testing.T, rd *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, "the stream ended before its close")
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && ev.name != "":
			return ev
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// TestStreamSurvivesOwnerFailover: a run's event stream read through a
// node that does not own the run goes on, without a gap or a repeat,
// after the owner is killed mid-stream and another node takes the shard.
func TestStreamSurvivesOwnerFailover(t *testing.T) {
	c := newCluster(t, 3, 5*time.Second)
	victim, shard := c.victim(t)
	entry := c.nodes[0]
	id := c.ordersOn(t, entry, shard, 1)[0]

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+entry.Addr()+"/api/harvest/workflows/"+id+"/events/stream", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	rd := bufio.NewReader(res.Body)
	var ids []int64
	var types []string
	read := func() sseEvent {
		ev := readSSE(t, rd)
		if ev.name == "history" {
			n, err := strconv.ParseInt(ev.id, 10, 64)
			require.NoError(t, err)
			var body struct{ Type string }
			require.NoError(t, json.Unmarshal([]byte(ev.data), &body))
			ids, types = append(ids, n), append(types, body.Type)
		}
		return ev
	}
	for len(ids) < 4 {
		require.Equal(t, "history", read().name)
	}
	require.Equal(t, approvedHistory[:4], types, "up to the approval wait, from the owner")

	c.kill(victim)
	eventually(t, "a new owner", 20*time.Second, func() bool { return c.owner(shard) != nil })
	eventually(t, "the approval accepted through the entry", 20*time.Second, func() bool {
		return call(t, entry, "POST", "/workflows/"+id+"/signal/approved", map[string]any{"by": "ops"}, "Idempotency-Key", "approve-"+id).Status == http.StatusAccepted
	})
	var last sseEvent
	for last.name != "closed" {
		last = read()
		require.NotEqual(t, "error", last.name, "the stream gave up: %s", last.data)
	}
	require.Contains(t, last.data, `"state":"COMPLETED"`)
	require.Equal(t, approvedHistory, types, "every event once, in order, across the failover")
	for i, n := range ids {
		require.Equal(t, int64(i), n)
	}
	_, err = rd.ReadString('\n')
	require.Error(t, err, "the stream ends after its close")
}
