package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine"
)

// signalPayloads sends one "item" signal a payload to the run id, through
// the engine (no body limit).
func signalPayloads(t *testing.T, e *engine.Engine, id string, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		_, err = e.Signal(context.Background(), engine.SignalRequest{ExecutionID: uuid.MustParse(id), SignalName: "item", Payload: raw})
		require.NoError(t, err)
	}
}

// metric reads a metric without labels from base's /metrics (base: a
// server's URL without BasePath), as authorization (may be empty).
func metric(t *testing.T, base, authorization, name string) float64 {
	t.Helper()
	v, err := metricValue(base, authorization, name)
	require.NoError(t, err)
	return v
}

// metricValue is metric's reading, for goroutines other than the test's.
func metricValue(base, authorization, name string) (float64, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: HTTP %d", res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s is not in /metrics", name)
}

// requireStreamWaits waits until a stream waited for the budget more
// than before times (harvest_stream_memory_waits_total of base).
func requireStreamWaits(t *testing.T, base string, before float64) {
	t.Helper()
	require.Eventually(t, func() bool { return metric(t, base, "", "harvest_stream_memory_waits_total") > before },
		30*time.Second, 5*time.Millisecond, "no stream waited for the stream memory budget")
}

// TestStreamMemoryBudget: a stream waits for the node's stream memory
// budget before it reads (or relays) a page, and goes on once there is
// room. Not parallel: it reads the process's metrics.
func TestStreamMemoryBudget(t *testing.T) {
	b := setup(t)
	id := startBlock(t, b, "budget-1")
	signalPayloads(t, b.engine, id, strings.Repeat("a", 40_000), strings.Repeat("b", 200_000), "c")
	last := b.eventCount(t, id) - 1
	readAll := func(t *testing.T, s *stream) {
		t.Helper()
		ids := s.until("WorkflowStarted")
		for ids[len(ids)-1] < last {
			f := s.next()
			ids = append(ids, s.eventID(f))
		}
		require.Equal(t, dense(0, last), ids, "every event once, in order")
	}
	// hold takes the whole budget of srv until the returned func runs.
	hold := func(t *testing.T, srv *Server) func() {
		held, err := srv.budget.acquire(context.Background(), srv.budget.size)
		require.NoError(t, err)
		require.Equal(t, srv.budget.size, held)
		return func() { srv.budget.release(held) }
	}

	base := strings.TrimSuffix(b.url, BasePath)
	t.Run("AStreamWaitsForRoom", func(t *testing.T) {
		release := hold(t, b.server)
		before := metric(t, base, "", "harvest_stream_memory_waits_total")
		s := openStream(t, b.url, id, "")
		requireStreamWaits(t, base, before)
		release()
		readAll(t, s)
	})
	t.Run("AForwardedStreamWaitsForItsNodesRoom", func(t *testing.T) {
		owner := ownerServer(t, b)
		proxy, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy"}, &movingRouter{single: single{b.engine}, url: owner.URL})
		require.NoError(t, err)
		ts := httptest.NewServer(proxy)
		t.Cleanup(ts.Close)
		release := hold(t, proxy)
		before := metric(t, ts.URL, "", "harvest_stream_memory_waits_total")
		s := openStream(t, ts.URL+BasePath, id, "")
		requireStreamWaits(t, ts.URL, before)
		release()
		readAll(t, s)
	})
	t.Run("AnEventLargerThanAPageIsSentWhole", func(t *testing.T) {
		srv, err := New(Config{NodeKey: testNodeKey, Limits: Limits{StreamMemory: StreamMemoryMin}}, SingleShard(b.engine))
		require.NoError(t, err)
		srv.streamPage = 16 << 10 // the 40 kB and 200 kB signals are each larger
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		readAll(t, openStream(t, ts.URL+BasePath, id, ""))
		// The client has the last event a moment before the handler gives
		// the last page's share back.
		held, deadline := metric(t, ts.URL, "", "harvest_stream_memory_bytes"), time.Now().Add(20*time.Second)
		for held != 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			held = metric(t, ts.URL, "", "harvest_stream_memory_bytes")
		}
		require.Zero(t, held, "every page gave its share back")
	})
}

func TestStreamPageBytes(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget int64
		want   int64
	}{
		{"TheDefaultBudgetReadsPagesOfFourMiB", StreamMemoryDefault, 4 << 20},
		{"ALargerBudgetKeepsFourMiB", 1 << 30, 4 << 20},
		{"ASmallBudgetReadsASixteenth", StreamMemoryMin, 128 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, streamPageBytes(c.budget))
		})
	}
}
