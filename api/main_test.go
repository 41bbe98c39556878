package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/internal/testworkflows"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	// typed has an input schema: user_id, an integer >= 1.
	typedWF = harvest.NewWorkflow("typed", func(_ harvest.Context, in map[string]any) (any, error) { return in, nil }).
		WithInputSchema(json.RawMessage(`{"type":"object","required":["user_id"],"properties":{"user_id":{"type":"integer","minimum":1}}}`))
	goSignal = harvest.NewSignal[string]("go")
	// approval declares one signal: "approved", an object {"by": string}.
	approvedSig = harvest.NewSignal[struct {
		By string `json:"by"`
	}]("approved")
	approvalWF = harvest.NewWorkflow("approval", func(ctx harvest.Context, _ json.RawMessage) (string, error) {
		a, err := approvedSig.Receive(ctx)
		return a.By, err
	}).WithSignals(approvedSig)
	blockWF = harvest.NewWorkflow("block", func(ctx harvest.Context, _ json.RawMessage) (string, error) {
		return goSignal.Receive(ctx)
	})
	// linger waits for "go"; cancelled, it waits for "go" again on a
	// disconnected context before it closes CANCELLED.
	lingerWF = harvest.NewWorkflow("linger", func(ctx harvest.Context, _ json.RawMessage) (string, error) {
		v, err := goSignal.Receive(ctx)
		if !errors.Is(err, harvest.ErrCanceled) {
			return v, err
		}
		if _, err := goSignal.Receive(harvest.NewDisconnectedContext(ctx)); err != nil {
			return "", err
		}
		return "", ctx.Err()
	})
)

type testBundle struct {
	pool   *pgxpool.Pool
	engine *engine.Engine
	server *Server
	url    string
	svc    *demo.Services
}

func setup(t testing.TB) *testBundle { return setupWith(t, nil) }

// setupWith starts an engine (its config adjusted by mutate) behind a server.
func setupWith(t testing.TB, mutate func(*engine.Config)) *testBundle {
	t.Helper()
	b := &testBundle{pool: pgtest.NewPool(t), svc: demo.NewServices()}
	b.serve(t, mutate)
	return b
}

// serve starts an engine on the bundle's database behind a new server,
// which the bundle's requests then go to.
func (b *testBundle) serve(t testing.TB, mutate func(*engine.Config)) {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(b.svc).Register(reg))
	require.NoError(t, reg.Register(blockWF, typedWF, approvalWF, lingerWF, shout, pairWF, testworkflows.QueryCounter, testworkflows.Tally, handToken, handTokenWF))
	out := &Outbound{}
	cfg := engine.Config{ShardID: 3, NodeID: "api-test", PollInterval: 20 * time.Millisecond, Logger: zerolog.Nop(), Outbound: out}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := engine.New(b.pool, reg, cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(e.Stop)
	b.engine = e
	b.server, err = New(Config{MaxBodyBytes: 64 << 10, Gates: e, NodeKey: testNodeKey}, SingleShard(e))
	require.NoError(t, err)
	out.Bind(b.server)
	ts := httptest.NewServer(b.server)
	t.Cleanup(ts.Close)
	b.url = ts.URL + BasePath
}

// testNodeKey signs the node requests of the tests (nodeHeaders).
var testNodeKey = []byte("api tests' node key, 32 bytes or more")

// nodeHeaders are the headers that make method and path (under BasePath)
// with body (as do sends it) a request of node n2 to the bundle's server,
// signed with testNodeKey; do takes them. set (name, value pairs) are set
// before signing.
func nodeHeaders(method, path string, body any, set ...string) []string {
	req := httptest.NewRequest(method, BasePath+path, nil)
	for i := 1; i < len(set); i += 2 {
		req.Header.Set(set[i-1], set[i])
	}
	SignNode(req, NodeSig{Key: testNodeKey, From: "n2", Identity: auth.Anonymous, Body: bodyBytes(body), Time: time.Now()})
	var out []string
	for name := range req.Header {
		out = append(out, name, req.Header.Get(name))
	}
	return out
}

// restart stops the engine and serves the shard from a new one, which
// knows none of the keys the old one claimed.
func (b *testBundle) restart(t testing.TB) {
	t.Helper()
	b.engine.Stop()
	b.serve(t, nil)
}

// response is a decoded answer.
type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// do sends a request; body is sent verbatim when it is a string or []byte,
// else JSON-encoded. headers alternate name, value.
func (b *testBundle) do(t testing.TB, method, path string, body any, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(bodyBytes(body))
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return decodeResponse(t, res)
}

// bodyBytes is body as do sends it: a string or []byte verbatim, nil as
// none, anything else JSON-encoded.
func bodyBytes(body any) []byte {
	switch v := body.(type) {
	case nil:
		return nil
	case string:
		return []byte(v)
	case []byte:
		return v
	}
	raw, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return raw
}

// decodeResponse reads an answer; a body must be JSON.
func decodeResponse(t testing.TB, res *http.Response) response {
	t.Helper()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "body %s", raw)
	}
	return out
}

// requireError checks the one JSON error shape.
func requireError(t testing.TB, r response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.Status, "body %s", r.Raw)
	require.Equal(t, code, r.Body["code"], "body %s", r.Raw)
	require.NotEmpty(t, r.Body["error"], "body %s", r.Raw)
}

// counts snapshots the rows a mutating request could add.
func (b *testBundle) counts(t testing.TB) [4]int {
	t.Helper()
	var c [4]int
	for i, table := range []string{"harvest_executions", "harvest_events", "harvest_start_idempotency", "harvest_signals"} {
		require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&c[i]))
	}
	return c
}

// doRaw is do for fuzzers: the body is sent verbatim and a non-JSON answer
// fails the test instead of being decoded blindly.
func (b *testBundle) doRaw(t testing.TB, method, path string, body []byte, headers ...string) response {
	t.Helper()
	for i := 1; i < len(headers); i += 2 {
		if !validHeaderValue(headers[i]) {
			headers[i] = "k"
		}
	}
	return b.do(t, method, path, body, headers...)
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

func urlPathEscape(s string) string { return url.PathEscape(s) }

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}
