package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

// Deadlines of the end-to-end tests. Start-up includes initdb of a durable
// (fsync on) managed server, which is slow under -race on a loaded machine.
const (
	readyTimeout   = 2 * time.Minute
	exitTimeout    = time.Minute
	requestTimeout = time.Minute
	pollInterval   = 25 * time.Millisecond
)

// daemon is one harvestd process under test.
type daemon struct {
	base    string // http://host:port
	cmd     *exec.Cmd
	out     *syncBuffer // stdout and stderr
	exited  chan struct{}
	waitErr error  // valid once exited is closed
	token   string // sent as a bearer token on every request, unless ""
}

// setup starts harvestd dev on a fresh data directory with the managed
// PostgreSQL and waits until it is ready.
func setup(t *testing.T) *daemon {
	t.Helper()
	return startDaemon(t, testDir(t))
}

// testDir is a fresh directory that the managed server, which runs as user
// postgres when the tests run as root, can reach (t.TempDir is 0700).
func testDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "harvestd-e2e-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	return dir
}

// startDaemon runs harvestd dev on dataDir and waits for /readyz.
func startDaemon(t *testing.T, dataDir string, extraArgs ...string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	d := launch(t, addr, append([]string{"dev", "--data-dir", dataDir, "--http-addr", addr}, extraArgs...)...)
	d.waitReady(t)
	return d
}

// launch runs harvestd with args, its HTTP API on addr, without waiting
// for it; cleanup stops the process (SIGTERM, then SIGKILL) and dumps its
// output if the test failed.
func launch(t *testing.T, addr string, args ...string) *daemon {
	t.Helper()
	d := &daemon{base: "http://" + addr, out: &syncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(harvestdBin, args...)
	d.cmd.Env = childEnv()
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	// If the test binary dies, the daemon stops too.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	require.NoError(t, d.cmd.Start())
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		// A race report (-race builds) or a failed stop shows here.
		if err := d.kill(); err != nil {
			t.Errorf("harvestd exit after SIGTERM: %v", err)
		}
		if t.Failed() {
			t.Logf("harvestd %s output:\n%s", strings.Join(args, " "), d.out.String())
		}
	})
	return d
}

// childEnv is this environment without HARVEST_* and PG* variables, so
// only the flags configure the daemon, plus the switch that makes the test
// binary run as harvestd.
func childEnv() []string {
	env := []string{asMainEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HARVEST_") && !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// freeAddr is 127.0.0.1 with a port that was free a moment ago and that
// no earlier call in this test binary returned: the kernel hands a closed
// port out again, and two daemons of one cluster (or of two parallel
// tests) given the same --raft-addr would fail to start.
func freeAddr(t *testing.T) string {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		if givenAddrs.claim(addr) {
			return addr
		}
	}
}

// givenAddrs are the addresses freeAddr has returned.
var givenAddrs = addrSet{seen: map[string]bool{}}

type addrSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

// claim records addr and reports whether it was new.
func (s *addrSet) claim(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[addr] {
		return false
	}
	s.seen[addr] = true
	return true
}

// waitReady polls /readyz until it answers 200; it fails at once if the
// process exits.
func (d *daemon) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := d.do(ctx, http.MethodGet, "/readyz", "")
		cancel()
		if err == nil && r.status == http.StatusOK {
			return
		}
		select {
		case <-d.exited:
			t.Fatalf("harvestd exited before it was ready: %v", d.waitErr)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("harvestd not ready within %v (last: %v, status %d)", readyTimeout, err, r.status)
		}
	}
}

// stop sends SIGTERM and requires a clean exit (status 0) in time.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	start := time.Now()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.exited:
	case <-time.After(exitTimeout):
		t.Fatalf("harvestd did not exit within %v of SIGTERM", exitTimeout)
	}
	t.Logf("harvestd exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	require.NoError(t, d.waitErr, "harvestd exit status after SIGTERM")
}

// kill stops the process if it still runs: SIGTERM, then SIGKILL after
// exitTimeout. It returns the exit error of a process it stopped.
func (d *daemon) kill() error {
	select {
	case <-d.exited:
		return nil
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return d.waitErr
	case <-time.After(exitTimeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("no exit within %v of SIGTERM, killed", exitTimeout)
	}
}

// reply is one HTTP answer.
type reply struct {
	status int
	raw    []byte
	body   map[string]any // nil unless the body is a JSON object
}

// do sends one request under /api/harvest (or path as is when it starts
// with /healthz, /readyz, /metrics), with d's token. headers are name,
// value pairs, set last (an Authorization pair replaces the token). It is
// safe to call from any goroutine.
func (d *daemon) do(ctx context.Context, method, path, body string, headers ...string) (reply, error) {
	url := d.base + path
	if !strings.HasPrefix(path, "/healthz") && !strings.HasPrefix(path, "/readyz") && !strings.HasPrefix(path, "/metrics") {
		url = d.base + "/api/harvest" + path
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return reply{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	if len(headers)%2 != 0 {
		return reply{}, errors.New("headers must be name, value pairs")
	}
	for i := 0; i < len(headers); i += 2 {
		req.Header[http.CanonicalHeaderKey(headers[i])] = []string{headers[i+1]}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	if r.raw, err = io.ReadAll(resp.Body); err != nil {
		return r, err
	}
	if bytes.HasPrefix(bytes.TrimSpace(r.raw), []byte("{")) {
		if err := json.Unmarshal(r.raw, &r.body); err != nil {
			return r, fmt.Errorf("decode %s %s answer %q: %w", method, path, r.raw, err)
		}
	}
	return r, nil
}

// client is the Go client of d, with d's token.
func (d *daemon) client() *client.Client {
	return client.New(d.base, client.WithToken(d.token))
}

// call is do for the test goroutine: it fails the test on a transport
// error.
func (d *daemon) call(t *testing.T, method, path, body string, headers ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	r, err := d.do(ctx, method, path, body, headers...)
	require.NoError(t, err, "%s %s", method, path)
	return r
}

func (d *daemon) post(t *testing.T, path, body string, headers ...string) reply {
	t.Helper()
	return d.call(t, http.MethodPost, path, body, headers...)
}

func (d *daemon) get(t *testing.T, path string) reply {
	t.Helper()
	return d.call(t, http.MethodGet, path, "")
}

// expect requires the status and returns the JSON object answer.
func (r reply) expect(t *testing.T, status int) map[string]any {
	t.Helper()
	require.Equal(t, status, r.status, "answer: %s", r.raw)
	require.NotNil(t, r.body, "answer is not a JSON object: %s", r.raw)
	return r.body
}

// expectError requires the error shape {error, code} with status and code.
func (r reply) expectError(t *testing.T, status int, code string) map[string]any {
	t.Helper()
	body := r.expect(t, status)
	require.Equal(t, code, body["code"], "answer: %s", r.raw)
	msg, ok := body["error"].(string)
	require.True(t, ok && msg != "", "answer has no error message: %s", r.raw)
	return body
}

// eventTypes lists a run's history event types in order.
func (d *daemon) eventTypes(t *testing.T, id string) []string {
	t.Helper()
	body := d.get(t, "/workflows/"+id+"/history?limit=1000").expect(t, http.StatusOK)
	events, ok := body["events"].([]any)
	require.True(t, ok, "history has no events list: %v", body)
	types := make([]string, len(events))
	for i, e := range events {
		types[i], _ = e.(map[string]any)["type"].(string)
	}
	return types
}

// countEvents counts a run's history events of one type.
func (d *daemon) countEvents(t *testing.T, id, eventType string) int {
	t.Helper()
	n := 0
	for _, typ := range d.eventTypes(t, id) {
		if typ == eventType {
			n++
		}
	}
	return n
}

// waitResult long-polls the result route until the run has closed.
func (d *daemon) waitResult(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(requestTimeout)
	for {
		r := d.get(t, "/workflows/"+id+"/result?wait=10s")
		if r.status == http.StatusOK {
			return r.expect(t, http.StatusOK)
		}
		require.Equal(t, http.StatusNoContent, r.status, "answer: %s", r.raw)
		require.True(t, time.Now().Before(deadline), "run %s still open after %v", id, requestTimeout)
	}
}

// syncBuffer is a bytes.Buffer safe for the process's two output pipes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestFreeAddrNeverRepeats pins what the cluster tests rely on: within a
// test binary, freeAddr never returns an address twice, even though the
// kernel may hand a just-closed port out again.
func TestFreeAddrNeverRepeats(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		addr := freeAddr(t)
		require.False(t, seen[addr], "freeAddr returned %s twice", addr)
		seen[addr] = true
	}
}
