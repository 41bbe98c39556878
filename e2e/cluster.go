package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Ports every node uses inside its own namespace.
const (
	httpPort   = 7233
	gossipPort = 7946
	raftPort   = 8300
)

// Cluster is the harvestd processes of a Net, one per host.
type Cluster struct {
	Net      *Net
	Binary   string            // harvestd
	Dir      string            // data dirs and logs
	Shards   map[uint16]string // seed shards (id -> DSN)
	Raft     bool              // run the raft shard catalog
	Secrets  Secrets           // every node's cluster key and initial admin token
	TLS      *TLS              // nil: the API and every hop in clear text
	ExtraEnv []string
	Logf     func(format string, args ...any)

	mu     sync.Mutex
	procs  map[int]*proc
	admin  *http.Client
	adminO sync.Once
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// NodeID is host i's node id.
func NodeID(i int) string { return fmt.Sprintf("n%d", i) }

// URL is host i's API base URL.
func (c *Cluster) URL(i int) string {
	return fmt.Sprintf("%s://%s:%d", c.TLS.scheme(), c.Net.Addr(i), httpPort)
}

func (c *Cluster) args(i int) []string {
	addr := c.Net.Addr(i)
	var join []string
	for j := 1; j <= c.Net.N; j++ {
		if j != i {
			join = append(join, fmt.Sprintf("%s:%d", c.Net.Addr(j), gossipPort))
		}
	}
	a := []string{"agent",
		"--node-id", NodeID(i),
		"--data-dir", filepath.Join(c.Dir, NodeID(i)),
		"--http-addr", fmt.Sprintf("%s:%d", addr, httpPort),
		"--gossip-addr", fmt.Sprintf("%s:%d", addr, gossipPort),
		"--gossip-profile", "local",
		"--join", strings.Join(join, ","),
	}
	for id, dsn := range c.Shards {
		a = append(a, "--shard", fmt.Sprintf("%d=%s", id, dsn))
	}
	a = append(a, "--cluster-key-file", c.Secrets.KeyFile)
	a = append(a, c.TLS.args()...)
	if !c.Raft {
		return append(a, "--auth", "off") // static shards keep no tokens
	}
	return append(a, "--raft-addr", fmt.Sprintf("%s:%d", addr, raftPort),
		"--bootstrap-expect", fmt.Sprint(min(c.Net.N, 3)),
		"--drain-check-interval", "2s",
		"--initial-token-file", c.Secrets.TokenFile) // --auth tokens, the default
}

// Start starts harvestd on host i (its log is appended to <dir>/n<i>.log).
func (c *Cluster) Start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs == nil {
		c.procs = map[int]*proc{}
	}
	if p := c.procs[i]; p != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("node %d is already running", i)
		}
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, NodeID(i)+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== e2e: start %s at %s\n", NodeID(i), time.Now().Format(time.RFC3339Nano))
	cmd := c.Net.Command(i, c.Binary, c.args(i)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), c.ExtraEnv...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	c.procs[i] = p
	return nil
}

func (c *Cluster) proc(i int) (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[i]
	if p == nil {
		return nil, fmt.Errorf("node %d was never started", i)
	}
	return p, nil
}

// Kill SIGKILLs node i and waits for it to exit.
func (c *Cluster) Kill(i int) error {
	p, err := c.proc(i)
	if err != nil {
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("node %d did not exit after SIGKILL", i)
	}
}

// Pause SIGSTOPs node i; Resume SIGCONTs it.
func (c *Cluster) Pause(i int) error  { return c.signal(i, syscall.SIGSTOP) }
func (c *Cluster) Resume(i int) error { return c.signal(i, syscall.SIGCONT) }

func (c *Cluster) signal(i int, sig syscall.Signal) error {
	p, err := c.proc(i)
	if err != nil {
		return err
	}
	return p.cmd.Process.Signal(sig)
}

// Running reports whether node i's process is alive.
func (c *Cluster) Running(i int) bool {
	p, err := c.proc(i)
	if err != nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// StopAll SIGTERMs every node and SIGKILLs those still alive after 10 s.
func (c *Cluster) StopAll() {
	for i := 1; i <= c.Net.N; i++ {
		if p, err := c.proc(i); err == nil {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(10 * time.Second)
	for i := 1; i <= c.Net.N; i++ {
		if p, err := c.proc(i); err == nil {
			select {
			case <-p.done:
			case <-deadline:
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}
}

// Secrets are a run's cluster key and admin token, in files of its work
// directory that every node gets (--cluster-key-file,
// --initial-token-file); every request the suite sends carries Token.
type Secrets struct {
	KeyFile   string
	TokenFile string
	Token     string
}

// NewSecrets writes a fresh cluster key (base64 of 32 random bytes) and
// admin token (hvt_<16 hex>_<64 hex>) into dir, readable by this user
// only.
func NewSecrets(dir string) (Secrets, error) {
	key := make([]byte, 32)
	id := make([]byte, 8)
	secret := make([]byte, 32)
	for _, b := range [][]byte{key, id, secret} {
		if _, err := rand.Read(b); err != nil {
			return Secrets{}, err
		}
	}
	s := Secrets{
		KeyFile:   filepath.Join(dir, "cluster.key"),
		TokenFile: filepath.Join(dir, "admin.token"),
		Token:     "hvt_" + hex.EncodeToString(id) + "_" + hex.EncodeToString(secret),
	}
	if err := os.WriteFile(s.KeyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return Secrets{}, err
	}
	if err := os.WriteFile(s.TokenFile, []byte(s.Token+"\n"), 0o600); err != nil {
		return Secrets{}, err
	}
	return s, nil
}

// authorize makes req carry the admin token.
func (s Secrets) authorize(req *http.Request) {
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
}

// httpClient is for admin and readiness calls (the workload has its own).
func (c *Cluster) httpClient() *http.Client {
	c.adminO.Do(func() { c.admin = c.TLS.adminClient() })
	return c.admin
}

// getJSON GETs url into v with the admin token; non-2xx is an error
// carrying the body.
func (c *Cluster) getJSON(ctx context.Context, url string, v any) error {
	return c.doJSON(ctx, http.MethodGet, url, nil, v)
}

// doJSON sends a request with the admin token and decodes the answer
// into v (unless nil); non-2xx is a *StatusError.
func (c *Cluster) doJSON(ctx context.Context, method, url string, body io.Reader, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.Secrets.authorize(req)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

// WaitReady waits until every running node answers /readyz and sees all N
// members alive.
func (c *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = c.ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready after %s: %w", timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Cluster) ready(ctx context.Context) error {
	for i := 1; i <= c.Net.N; i++ {
		if err := c.getJSON(ctx, c.URL(i)+"/readyz", nil); err != nil {
			return fmt.Errorf("node %d readyz: %w", i, err)
		}
		var m struct {
			Members []struct {
				NodeID string `json:"node_id"`
				State  string `json:"state"`
			} `json:"members"`
		}
		if err := c.getJSON(ctx, c.URL(i)+"/api/harvest/cluster/members", &m); err != nil {
			return fmt.Errorf("node %d members: %w", i, err)
		}
		alive := 0
		for _, mem := range m.Members {
			if mem.State == "alive" {
				alive++
			}
		}
		if alive != c.Net.N {
			return fmt.Errorf("node %d sees %d of %d members alive", i, alive, c.Net.N)
		}
	}
	if c.Raft {
		if _, err := c.Leader(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Peer is one raft server as /admin/raft/peers shows it.
type Peer struct {
	ID     string `json:"id"`
	Addr   string `json:"addr"`
	Voter  bool   `json:"voter"`
	Leader bool   `json:"leader"`
}

// Leader asks the nodes for the raft peers and returns the leader's host.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	var last error = errors.New("no node answered")
	for i := 1; i <= c.Net.N; i++ {
		var out struct {
			Peers []Peer `json:"peers"`
		}
		if err := c.getJSON(ctx, c.URL(i)+"/api/harvest/admin/raft/peers", &out); err != nil {
			last = err
			continue
		}
		for _, p := range out.Peers {
			if p.Leader {
				for j := 1; j <= c.Net.N; j++ {
					if NodeID(j) == p.ID {
						return j, nil
					}
				}
			}
		}
		last = fmt.Errorf("node %d knows no raft leader", i)
	}
	return 0, last
}
