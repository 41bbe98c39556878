package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
)

// stream is an open event stream as a client reads it.
type stream struct {
	t   *testing.T
	res *http.Response
	rd  *bufio.Reader
}

// openStream opens base's stream of id (base: a server's URL with
// BasePath), resuming after lastID when it is not empty.
func openStream(t *testing.T, base, id, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/workflows/"+id+"/events/stream", nil)
	require.NoError(t, err)
	if lastID != "" {
		req.Header.Set(lastEventIDHeader, lastID)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	return &stream{t: t, res: res, rd: bufio.NewReader(res.Body)}
}

// next is the next event (comments skipped).
func (s *stream) next() sseFrame {
	s.t.Helper()
	for {
		f, err := readFrame(s.rd)
		require.NoError(s.t, err)
		if f.event != "" {
			return f
		}
	}
}

// until reads events up to the first history event of type typ; it
// returns the ids read.
func (s *stream) until(typ string) []int64 {
	s.t.Helper()
	var ids []int64
	for {
		f := s.next()
		require.Equal(s.t, sseHistory, f.event, "frame %s", f.raw)
		ids = append(ids, s.eventID(f))
		if historyType(s.t, f) == typ {
			return ids
		}
	}
}

// end reads the rest: history ids, then the closed event and the end of
// the body. It returns the ids and the closed state.
func (s *stream) end() ([]int64, string) {
	s.t.Helper()
	ids, state, _ := s.endWith()
	return ids, state
}

// endWith is end with the closed event's data.
func (s *stream) endWith() ([]int64, string, map[string]any) {
	s.t.Helper()
	var ids []int64
	for {
		f := s.next()
		if f.event == sseClosed {
			var body map[string]any
			require.NoError(s.t, json.Unmarshal(frameData(f), &body))
			_, err := readFrame(s.rd)
			require.ErrorIs(s.t, err, io.EOF, "the stream ends after closed")
			state, _ := body["state"].(string)
			return ids, state, body
		}
		require.Equal(s.t, sseHistory, f.event, "frame %s", f.raw)
		ids = append(ids, s.eventID(f))
	}
}

func (s *stream) eventID(f sseFrame) int64 {
	n, err := strconv.ParseInt(f.id, 10, 64)
	require.NoError(s.t, err, "frame %s", f.raw)
	var ev struct {
		EventID int64 `json:"event_id"`
	}
	require.NoError(s.t, json.Unmarshal(frameData(f), &ev))
	require.Equal(s.t, n, ev.EventID, "the SSE id is the event_id")
	return n
}

func historyType(t *testing.T, f sseFrame) string {
	var ev struct{ Type string }
	require.NoError(t, json.Unmarshal(frameData(f), &ev))
	return ev.Type
}

// frameData is the data line of a frame.
func frameData(f sseFrame) []byte {
	for _, line := range splitLines(f.raw) {
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			return []byte(v)
		}
	}
	return nil
}

func splitLines(raw []byte) []string {
	var out []string
	rd := bufio.NewScanner(bytes.NewReader(raw))
	rd.Buffer(nil, len(raw)+1)
	for rd.Scan() {
		out = append(out, rd.Text())
	}
	return out
}

func dense(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// startBlock starts a block run (it waits for "go") on b.
func startBlock(t *testing.T, b *testBundle, wfID string) string {
	t.Helper()
	r := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": wfID})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body["execution_id"].(string)
}

func TestEventsStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := startBlock(t, b, "stream-1")

	t.Run("LiveToTheClose", func(t *testing.T) {
		s := openStream(t, b.url, id, "")
		first := s.until("WorkflowStarted")
		require.Equal(t, int64(0), first[0])
		require.Equal(t, http.StatusAccepted, b.do(t, "POST", "/workflows/"+id+"/signal/go", `"now"`).Status)
		rest, state := s.end()
		require.Equal(t, engine.StateCompleted, state)
		all := append(first, rest...)
		require.Equal(t, dense(0, all[len(all)-1]), all, "every event once, in order")
		require.Equal(t, b.eventCount(t, id), int64(len(all)))
	})
	t.Run("ResumesAfterLastEventID", func(t *testing.T) {
		n := b.eventCount(t, id)
		ids, state := openStream(t, b.url, id, "1").end()
		require.Equal(t, engine.StateCompleted, state)
		require.Equal(t, dense(2, n-1), ids)
	})
	t.Run("ClosedRunAfterItsLastEvent", func(t *testing.T) {
		n := b.eventCount(t, id)
		ids, state := openStream(t, b.url, id, strconv.FormatInt(n-1, 10)).end()
		require.Empty(t, ids)
		require.Equal(t, engine.StateCompleted, state)
	})
	t.Run("BadInput", func(t *testing.T) {
		for _, v := range []string{"abc", "-1", "99999999999999999999", "1.5"} {
			r := b.do(t, "GET", "/workflows/"+id+"/events/stream", nil, lastEventIDHeader, v)
			requireError(t, r, http.StatusBadRequest, codeInvalidArgument)
		}
		requireError(t, b.do(t, "GET", "/workflows/not-a-uuid/events/stream", nil), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "GET", "/workflows/0003e886-0000-4000-8000-000000000001/events/stream", nil), http.StatusNotFound, codeNotFound)
	})
}

// TestEventsStreamOfAChain: a run that continues as new closes its
// stream (CONTINUED_AS_NEW, naming its successor), though Result follows
// the chain to a run still open.
func TestEventsStreamOfAChain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, "POST", "/workflows/"+demo.CounterName+"/start", map[string]any{"input": demo.CounterInput{Every: 1, Until: 3}})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	id := r.Body["execution_id"].(string)
	s := openStream(t, b.url, id, "")
	first := s.until("WorkflowStarted")
	require.Equal(t, http.StatusAccepted, b.do(t, "POST", "/workflows/"+id+"/signal/"+demo.CounterAddSignal, map[string]any{"id": "a", "n": 1}).Status)
	rest, state, closed := s.endWith()
	require.Equal(t, engine.StateContinuedAsNew, state)
	next := b.do(t, "GET", "/workflows/"+id, nil).Body["execution"].(map[string]any)["continued_to"]
	require.NotEmpty(t, next)
	require.Equal(t, next, closed["continued_to"])
	require.Equal(t, dense(0, b.eventCount(t, id)-1), append(first, rest...))
}

func (b *testBundle) eventCount(t *testing.T, id string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_events WHERE execution_id = $1`, id).Scan(&n))
	return n
}

// movingRouter routes every shard to another node's URL, which a test
// may change (an ownership change).
type movingRouter struct {
	single
	mu  sync.Mutex
	url string
}

func (r *movingRouter) ForShard(id uint16) (Target, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Target{ShardID: id, Owner: "owner", URL: r.url}, nil
}

func (r *movingRouter) move(url string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.url = url
}

// ownerServer serves b's engine as another node would.
func ownerServer(t *testing.T, b *testBundle) *httptest.Server {
	t.Helper()
	srv, err := New(Config{NodeKey: testNodeKey, NodeID: "owner"}, SingleShard(b.engine))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func TestEventsStreamForwarded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := ownerServer(t, b)
	router := &movingRouter{single: single{b.engine}, url: owner.URL}
	proxy, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy"}, router)
	require.NoError(t, err)
	ts := httptest.NewServer(proxy)
	t.Cleanup(ts.Close)
	base := ts.URL + BasePath

	t.Run("EventByEvent", func(t *testing.T) {
		id := startBlock(t, b, "fwd-1")
		s := openStream(t, base, id, "")
		first := s.until("WorkflowStarted")
		require.Equal(t, http.StatusAccepted, b.do(t, "POST", "/workflows/"+id+"/signal/go", `"x"`).Status)
		rest, state := s.end()
		require.Equal(t, engine.StateCompleted, state)
		all := append(first, rest...)
		require.Equal(t, dense(0, b.eventCount(t, id)-1), all)
	})
	t.Run("OwnerErrorsPassThrough", func(t *testing.T) {
		r, err := http.Get(base + "/workflows/0003e886-0000-4000-8000-000000000001/events/stream")
		require.NoError(t, err)
		defer r.Body.Close()
		requireError(t, decodeResponse(t, r), http.StatusNotFound, codeNotFound)
	})
	t.Run("ResumesAfterAnOwnershipChange", func(t *testing.T) {
		id := startBlock(t, b, "fwd-2")
		s := openStream(t, base, id, "")
		first := s.until("WorkflowStarted")
		next := ownerServer(t, b)
		router.move(next.URL)
		owner.CloseClientConnections()
		require.Equal(t, http.StatusAccepted, b.do(t, "POST", "/workflows/"+id+"/signal/go", `"x"`).Status)
		rest, state := s.end()
		require.Equal(t, engine.StateCompleted, state)
		all := append(first, rest...)
		require.Equal(t, dense(0, b.eventCount(t, id)-1), all, "no event lost or repeated across the move")
	})
	t.Run("NoOverallTimeout", func(t *testing.T) {
		require.Zero(t, newStreamClient(nil).Timeout, "a stream outlives the forwarding client's timeout")
	})
}

// keepAlive reads frames up to the first comment frame, which it returns;
// it fails on the end of the stream or a closed event first.
func (s *stream) keepAlive() string {
	s.t.Helper()
	for {
		f, err := readFrame(s.rd)
		require.NoError(s.t, err)
		if f.event == "" {
			return string(f.raw)
		}
		require.NotEqual(s.t, sseClosed, f.event, "the run closed before a keep-alive")
	}
}

// TestEventsStreamKeepAlive: a silent stream gets a keep-alive comment
// after Config.StreamHeartbeat of silence, here and through a forwarding
// node, and goes on to its close.
func TestEventsStreamKeepAlive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const beat = 20 * time.Millisecond
	srv, err := New(Config{NodeKey: testNodeKey, NodeID: "owner", StreamHeartbeat: beat}, SingleShard(b.engine))
	require.NoError(t, err)
	owner := httptest.NewServer(srv)
	t.Cleanup(owner.Close)
	proxySrv, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy", StreamHeartbeat: beat}, &movingRouter{single: single{b.engine}, url: owner.URL})
	require.NoError(t, err)
	proxy := httptest.NewServer(proxySrv)
	t.Cleanup(proxy.Close)

	for _, tc := range []struct{ name, base string }{{"Owner", owner.URL}, {"Forwarded", proxy.URL}} {
		t.Run(tc.name, func(t *testing.T) {
			id := startBlock(t, b, "ka-"+tc.name)
			s := openStream(t, tc.base+BasePath, id, "")
			require.Equal(t, ": keep-alive\n\n", s.keepAlive())
			require.Equal(t, ": keep-alive\n\n", s.keepAlive(), "again while the run stays silent")
			require.Equal(t, http.StatusAccepted, b.do(t, "POST", "/workflows/"+id+"/signal/go", `"x"`).Status)
			ids, state := s.end()
			require.Equal(t, engine.StateCompleted, state)
			require.Equal(t, b.eventCount(t, id)-1, ids[len(ids)-1], "every event after the keep-alives")
		})
	}
	t.Run("DefaultIsFifteenSeconds", func(t *testing.T) {
		require.Equal(t, 15*time.Second, Config{}.withDefaults().StreamHeartbeat)
		require.Equal(t, 35*time.Second, streamIdle(StreamHeartbeatDefault), "a forwarding node waits two beats and 5 s")
	})
}
