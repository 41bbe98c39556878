package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

// Canned admin answers: shard 0 holds claims and runs inside a 24 h
// window, shard 1 is unreachable.
const (
	shard0JSON = `{"shard_id":0,"state":"writable","database":"postgres://h/a","added_at":"2026-01-01T00:00:00Z",
		"state_since":"2026-01-01T00:00:00Z","owner":"n1","reachable":true,
		"status":{"shard_id":0,"claims_in_window":3,"newest_claim_at":"2026-01-02T10:00:00Z","runs_in_window":5,
		"newest_run_at":"2026-01-02T10:00:01Z","running_executions":2,"window_passes_at":"2026-01-03T10:00:01Z",
		"now":"2026-01-02T12:00:00Z"}}`
	shard1JSON = `{"shard_id":1,"state":"draining","database":"postgres://h/b","added_at":"2026-01-01T00:00:00Z",
		"state_since":"2026-01-02T00:00:00Z","reachable":false,"error":"dial tcp: connection refused"}`
	catalogJSON = `{"shards":[` + shard0JSON + `,` + shard1JSON + `],"epochs":[],"idempotency_window":"24h0m0s","leader":"n2"}`
)

// fakeAdmin serves canned admin answers; GET /admin/shards/0 answers the
// next of polls (the last one repeats).
type fakeAdmin struct {
	mu    sync.Mutex
	polls []string
	drain string
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	var body string
	switch r.Method + " " + r.URL.Path {
	case "GET /api/harvest/admin/shards":
		body = catalogJSON
	case "GET /api/harvest/admin/shards/0":
		f.mu.Lock()
		body = f.polls[0]
		if len(f.polls) > 1 {
			f.polls = f.polls[1:]
		}
		f.mu.Unlock()
	case "POST /api/harvest/admin/shards/0/drain":
		w.WriteHeader(http.StatusAccepted)
		body = f.drain
	default:
		w.WriteHeader(http.StatusNotFound)
		body = `{"error":"no route","code":"not_found"}`
	}
	_, _ = w.Write([]byte(body))
}

func setupFakeAdmin(t *testing.T, f *fakeAdmin) *testBundle {
	t.Helper()
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	return &testBundle{url: hs.URL}
}

// draining is shard 0 draining since 2026-01-02T12:00:00Z, read at now.
func draining(now string) string {
	return `{"shard_id":0,"state":"draining","database":"postgres://h/a","added_at":"2026-01-01T00:00:00Z",
		"state_since":"2026-01-02T12:00:00Z","reachable":true,"status":{"claims_in_window":1,"runs_in_window":1,
		"running_executions":0,"window_passes_at":"2026-01-03T12:00:00Z","now":"` + now + `"}}`
}

func TestShardTables(t *testing.T) {
	b := setupFakeAdmin(t, &fakeAdmin{polls: []string{shard0JSON}})

	t.Run("List", func(t *testing.T) {
		table := b.ok(t, "shard", "list")
		require.Equal(t, []string{
			"ID  STATE     OWNER  CLAIMS IN WINDOW  RUNS IN WINDOW  RUNNING  WINDOW PASSES  DATABASE",
			"0   writable  n1     3                 5               2        in 22h0m1s     postgres://h/a",
			"1   draining  -      ?                 ?               ?        unreachable    postgres://h/b",
			"",
			"idempotency window 24h0m0s; raft leader n2",
			"shard 1 unreachable: dial tcp: connection refused",
		}, strings.Split(strings.TrimRight(table, "\n"), "\n"))
	})

	t.Run("Status", func(t *testing.T) {
		table := b.ok(t, "shard", "status", "0")
		require.Equal(t, "writable since 2026-01-01T00:00:00.000Z", cell(t, table, "State"))
		require.Equal(t, "3 (newest 2026-01-02T10:00:00.000Z)", cell(t, table, "Claims in window"))
		require.Equal(t, "5 (newest 2026-01-02T10:00:01.000Z)", cell(t, table, "Runs in window"))
		require.Equal(t, "2", cell(t, table, "Running executions"))
		require.Equal(t, "2026-01-03T10:00:01.000Z (in 22h0m1s)", cell(t, table, "Window passes"))
	})

	t.Run("JSONIsTheServerBody", func(t *testing.T) {
		require.Equal(t, "24h0m0s", b.okJSON(t, "shard", "list")["idempotency_window"])
		require.Equal(t, float64(3), b.okJSON(t, "shard", "status", "0")["status"].(map[string]any)["claims_in_window"])
	})
}

func TestShardDrainWait(t *testing.T) {
	f := &fakeAdmin{
		drain: `{"shard":` + draining("2026-01-02T12:00:00Z") + `,"forced":true,"risk":"shard 0 is the last writable shard"}`,
		polls: []string{draining("2026-01-02T18:00:00Z"), draining("2026-01-03T12:00:00Z"),
			strings.Replace(draining("2026-01-03T12:00:05Z"), `"draining"`, `"read_only"`, 1)},
	}
	b := setupFakeAdmin(t, f)

	t.Run("OneLinePerPollWithoutATerminal", func(t *testing.T) {
		out := b.ok(t, "shard", "drain", "0", "--force", "--wait", "--poll", "10ms")
		require.Contains(t, out, "Shard 0 (writable) before the drain, inside the 24h0m0s idempotency window:\nClaims in window    3 (newest")
		require.Equal(t, "shard 0 is the last writable shard", cell(t, out, "Risk"))
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		require.Equal(t, []string{
			"[######------------------]  25%  shard 0 draining: 1 claims and 1 runs in window, 0 running; read_only in about 18h0m0s",
			"[########################] 100%  shard 0 draining: 1 claims and 1 runs in window, 0 running; waiting for the leader's drain check",
			"[########################] 100%  shard 0 is read_only: nothing placed on it is inside the window",
		}, lines[len(lines)-3:])
	})

	t.Run("JSONKeepsStdoutOneDocument", func(t *testing.T) {
		f.mu.Lock()
		f.polls = []string{strings.Replace(draining("2026-01-03T12:00:05Z"), `"draining"`, `"read_only"`, 1)}
		f.mu.Unlock()
		r := b.ctl(t, "--output", "json", "shard", "drain", "0", "--force", "--wait", "--poll", "10ms")
		require.Equal(t, exitOK, r.code, r.stderr)
		require.JSONEq(t, f.drain, r.stdout)
		require.Contains(t, r.stderr, "before the drain")
		require.Contains(t, r.stderr, "is read_only")
	})
}

func TestProgressOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	since := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	p := &progress{w: &buf, tty: true, window: time.Hour, since: since}
	sh := &client.Shard{ShardID: 4, State: client.ShardDraining, StateSince: since,
		Status: &client.DrainStatus{Now: since.Add(30 * time.Minute)}}
	done, err := p.draw(sh)
	require.False(t, done)
	require.NoError(t, err)
	sh.Status = nil
	sh.Error = "down"
	_, _ = p.draw(sh)
	sh.State = client.ShardWritable
	done, err = p.draw(sh)
	require.True(t, done)
	require.ErrorContains(t, err, "shard 4 is writable: the drain was undone")
	first := "[############------------]  50%  shard 4 draining: 0 claims and 0 runs in window, 0 running; read_only in about 30m0s"
	second := "[------------------------]   ?%  shard 4 draining, unreachable: down"
	require.Equal(t, "\r"+first+"\r"+second+strings.Repeat(" ", len(first)-len(second))+"\n", buf.String(),
		"redrawn in place, padded over the longer line, ended with a newline")
}
