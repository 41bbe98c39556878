package deploytest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// localCluster is a scripts/local-cluster.sh cluster in a state directory
// of its own, on free ports.
type localCluster struct {
	root, state string
	env         []string
	token       string // the admin token, once up created it
	http        []int
	ports       []int // every TCP port: HTTP, gossip, raft, PostgreSQL
	udp         []int // gossip
}

func newLocalCluster(t *testing.T) *localCluster {
	t.Helper()
	// Not t.TempDir: as root, PostgreSQL runs as the user postgres, which
	// must reach the state directory.
	state, err := os.MkdirTemp("", "harvest-localcluster-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(state, 0o755))
	t.Cleanup(func() { os.RemoveAll(state) })
	return localClusterAt(t, repoRoot(t), state)
}

// localClusterAt is the cluster of the script in root with the state
// directory state, on free ports.
func localClusterAt(t *testing.T, root, state string) *localCluster {
	t.Helper()
	c := &localCluster{root: root, state: state}
	free := freePorts(t, 10)
	c.http, c.ports, c.udp = free[0:3], free, free[3:6]
	list := func(ps []int) string {
		return fmt.Sprintf("%d %d %d", ps[0], ps[1], ps[2])
	}
	c.env = append(os.Environ(),
		// A busy machine builds the binaries and forms the raft group
		// slowly: the script's own readiness bound, and the test's.
		"HARVEST_CLUSTER_TIMEOUT=300",
		"HARVEST_CLUSTER_DIR="+state,
		"HARVEST_CLUSTER_HTTP_PORTS="+list(free[0:3]),
		"HARVEST_CLUSTER_GOSSIP_PORTS="+list(free[3:6]),
		"HARVEST_CLUSTER_RAFT_PORTS="+list(free[6:9]),
		"HARVEST_CLUSTER_PG_PORT="+strconv.Itoa(free[9]),
	)
	return c
}

// upTimeout bounds `local-cluster.sh up`: a go build of both binaries,
// PostgreSQL, and three nodes ready (HARVEST_CLUSTER_TIMEOUT, 300 s).
const upTimeout = 10 * time.Minute

// script runs scripts/local-cluster.sh with a subcommand.
func (c *localCluster) script(t *testing.T, timeout time.Duration, sub string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.root, "scripts", "local-cluster.sh"), sub)
	cmd.Dir = c.root
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second // a background child holding the pipe must not hang the test
	err := cmd.Run()
	return out.String(), err
}

// ctl runs harvestctl against node i (1-based) with -o json, as the
// README does after exporting HARVEST_TOKEN.
func (c *localCluster) ctl(t *testing.T, node int, args ...string) ([]byte, error) {
	t.Helper()
	return c.ctlAs(t, c.token, node, args...)
}

// ctlAs is ctl with token as HARVEST_TOKEN ("" for none).
func (c *localCluster) ctlAs(t *testing.T, token string, node int, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"--addr", c.base(node), "-o", "json"}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(c.state, "bin", "harvestctl"), full...)
	cmd.Env = append(withoutEnv(withoutEnv(os.Environ(), "HARVEST_TOKEN"), "HARVEST_CA_CERT"),
		"HARVEST_TOKEN="+token, "HARVEST_CA_CERT="+c.caFile())
	return cmd.CombinedOutput()
}

// base is node i's (1-based) API URL: the script turns TLS on by default.
func (c *localCluster) base(node int) string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.http[node-1])
}

// caFile is the CA the script made, which clients trust.
func (c *localCluster) caFile() string { return filepath.Join(c.state, "certs", "ca.pem") }

// httpClient trusts the script's CA.
func (c *localCluster) httpClient(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(c.caFile())
	require.NoError(t, err, "up makes the CA")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem), "a CA certificate in %s", c.caFile())
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// requireAgentsRunTLS requires every harvestd the script started to serve
// with the state directory's certificates, and its API to refuse clear text
// and an untrusted certificate.
func (c *localCluster) requireAgentsRunTLS(t *testing.T, pids map[string]int) {
	t.Helper()
	certs := filepath.Join(c.state, "certs")
	want := map[string]string{"tls-cert": "node.pem", "tls-key": "node-key.pem", "tls-ca": "ca.pem"}
	for _, node := range []string{"n1", "n2", "n3"} {
		args := cmdline(t, pids[node])
		for flag, f := range want {
			i := slices.Index(args, "--"+flag)
			require.True(t, i >= 0 && i+1 < len(args), "%s runs without --%s: %q", node, flag, args)
			require.Equal(t, filepath.Join(certs, f), args[i+1], "%s: --%s", node, flag)
		}
	}
	for _, key := range []string{"node-key.pem", "ca-key.pem"} {
		info, err := os.Stat(filepath.Join(certs, key))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s mode", key)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	resp, err := plain.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", c.http[0]))
	if err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "clear text to a TLS port")
	}
	_, err = plain.Get(c.base(1) + "/readyz")
	require.ErrorContains(t, err, "certificate", "a client without the CA")
	resp, err = c.httpClient(t).Get(c.base(1) + "/readyz")
	require.NoError(t, err, "a client trusting the CA")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// cmdline is a process's arguments.
func cmdline(t *testing.T, pid int) []string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	require.NoError(t, err, "pid %d command line", pid)
	return strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
}

// withoutEnv is env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// secretFiles are the cluster key and admin token files of the state
// directory, by --flag.
func (c *localCluster) secretFiles() map[string]string {
	return map[string]string{
		"cluster-key-file":   filepath.Join(c.state, "cluster.key"),
		"initial-token-file": filepath.Join(c.state, "admin.token"),
	}
}

// readSecrets requires both secrets, private to this user, and returns
// their contents by --flag.
func (c *localCluster) readSecrets(t *testing.T) map[string]string {
	t.Helper()
	got := map[string]string{}
	for flag, f := range c.secretFiles() {
		info, err := os.Stat(f)
		require.NoError(t, err, "up creates %s", f)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s mode", f)
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		got[flag] = string(data)
	}
	requireClusterKeyFile(t, c.secretFiles()["cluster-key-file"])
	requireTokenFile(t, c.secretFiles()["initial-token-file"])
	return got
}

// requireAgentsHaveSecrets requires every harvestd the script started to
// run with --cluster-key-file and --initial-token-file naming the state
// directory's files.
func (c *localCluster) requireAgentsHaveSecrets(t *testing.T, pids map[string]int) {
	t.Helper()
	for _, node := range []string{"n1", "n2", "n3"} {
		args := cmdline(t, pids[node])
		for flag, f := range c.secretFiles() {
			i := slices.Index(args, "--"+flag)
			require.True(t, i >= 0 && i+1 < len(args), "%s runs without --%s: %q", node, flag, args)
			require.Equal(t, f, args[i+1], "%s: --%s", node, flag)
		}
	}
}

func (c *localCluster) ctlJSON(t *testing.T, node int, args ...string) map[string]any {
	t.Helper()
	out, err := c.ctl(t, node, args...)
	require.NoError(t, err, "harvestctl %v via n%d: %s", args, node, out)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v), "harvestctl %v: %s", args, out)
	return v
}

// ourPIDs are the harvestd and postmaster processes the script started.
func (c *localCluster) ourPIDs(t *testing.T) map[string]int {
	t.Helper()
	return c.pids(t, filepath.Join(c.state, "pg", "data", "postmaster.pid"))
}

// pids are the harvestd processes the script started and the postmaster
// of the pid file postmasterPID.
func (c *localCluster) pids(t *testing.T, postmasterPID string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	files := map[string]string{"postgres": postmasterPID}
	for _, n := range []string{"n1", "n2", "n3"} {
		files[n] = filepath.Join(c.state, n+".pid")
	}
	for name, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err, "%s pid file", name)
		first, _, _ := strings.Cut(string(data), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		require.NoError(t, err, "%s pid file %q", name, data)
		pids[name] = pid
	}
	return pids
}

// TestLocalClusterScript runs the README's no-Docker "Try a cluster":
// scripts/local-cluster.sh up, three alive members, a keyed start through
// node 3 replayed through node 1, a shard drain, and down leaving no
// process or port behind.
func TestLocalClusterScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: %v", tool, err)
		}
	}
	if _, err := exec.LookPath("initdb"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			t.Skip("no PostgreSQL server binaries (initdb)")
		}
	}
	t.Parallel()
	c := newLocalCluster(t)
	down := func() (string, error) { return c.script(t, 2*time.Minute, "down") }
	t.Cleanup(func() {
		if out, err := down(); err != nil { // a no-op when the test already ran it
			t.Errorf("local-cluster.sh down at cleanup: %v\n%s", err, out)
		}
	})

	began := time.Now()
	out, err := c.script(t, upTimeout, "up")
	if err != nil {
		c.dumpLogs(t)
	}
	require.NoError(t, err, "local-cluster.sh up:\n%s", out)
	t.Logf("up in %s", time.Since(began).Round(time.Millisecond))
	pids := c.ourPIDs(t)
	secrets := c.readSecrets(t)
	c.token = strings.TrimSpace(secrets["initial-token-file"])
	require.Contains(t, out, c.secretFiles()["initial-token-file"], "up says where the admin token is")

	t.Run("EveryAgentGetsTheClusterKeyAndInitialToken", func(t *testing.T) {
		c.requireAgentsHaveSecrets(t, pids)
	})

	t.Run("EveryAgentServesTLS", func(t *testing.T) {
		c.requireAgentsRunTLS(t, pids)
	})

	t.Run("RequestsWithoutTheTokenAreRefused", func(t *testing.T) {
		out, err := c.ctlAs(t, "", 1, "cluster", "members")
		require.Error(t, err, "harvestctl without a token: %s", out)
		require.Contains(t, string(out), "HTTP 401", "harvestctl without a token")
	})

	t.Run("StatusListsThreeAliveMembers", func(t *testing.T) {
		out, err := c.script(t, time.Minute, "status")
		require.NoError(t, err, out)
		for _, n := range []string{"n1", "n2", "n3"} {
			require.Regexp(t, `(?m)^`+n+`\s+running`, out)
			require.Regexp(t, `(?m)^`+n+`\b.*\balive\b`, out, "status prints harvestctl cluster members")
		}
	})

	t.Run("EveryNodeSeesThreeAliveMembers", func(t *testing.T) {
		for node := 1; node <= 3; node++ {
			members := c.ctlJSON(t, node, "cluster", "members")["members"].([]any)
			var alive []string
			for _, m := range members {
				m := m.(map[string]any)
				if m["state"] == "alive" {
					alive = append(alive, m["node_id"].(string))
				}
			}
			require.ElementsMatch(t, []string{"n1", "n2", "n3"}, alive, "members seen by n%d: %v", node, members)
		}
	})

	t.Run("KeyedStartViaNode3DeduplicatesViaNode1", func(t *testing.T) {
		start := []string{"workflow", "start", "onboarding", "--idempotency-key", "try-a-cluster-1", "--input-json", `{"user_id": 42}`}
		first := c.ctlJSON(t, 3, start...)
		require.Equal(t, true, first["started_fresh"], "%v", first)
		require.Equal(t, false, first["deduplicated"], "%v", first)
		replay := c.ctlJSON(t, 1, start...)
		require.Equal(t, first["execution_id"], replay["execution_id"], "%v", replay)
		require.Equal(t, true, replay["deduplicated"], "%v", replay)
	})

	t.Run("DrainShard1", func(t *testing.T) {
		out, err := c.ctl(t, 2, "shard", "drain", "1")
		require.NoError(t, err, "harvestctl shard drain 1: %s", out)
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := c.ctlJSON(t, 2, "shard", "status", "1")
			state := fmt.Sprint(st["state"])
			if state == "draining" || state == "read_only" {
				break
			}
			require.True(t, time.Now().Before(deadline), "shard 1 after the drain: %v", st)
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("DownLeavesNoProcessOrPort", func(t *testing.T) {
		out, err := down()
		require.NoError(t, err, "local-cluster.sh down:\n%s", out)
		for name, pid := range pids {
			require.False(t, running(pid), "%s (pid %d) still runs after down", name, pid)
		}
		require.Empty(t, processesMentioning(t, c.state), "processes of this cluster left after down")
		for _, p := range c.ports {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			require.NoError(t, err, "TCP port %d still taken after down", p)
			l.Close()
		}
		for _, p := range c.udp {
			l, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
			require.NoError(t, err, "UDP port %d still taken after down", p)
			l.Close()
		}
	})

	t.Run("UpAgainKeepsTheSecrets", func(t *testing.T) {
		out, err := c.script(t, upTimeout, "up")
		require.NoError(t, err, "local-cluster.sh up again:\n%s", out)
		require.Equal(t, secrets, c.readSecrets(t), "a second up keeps the cluster key and the token")
		c.requireAgentsHaveSecrets(t, c.ourPIDs(t))
		c.ctlJSON(t, 1, "cluster", "members") // the catalog still knows the token
	})
}

// dumpLogs logs the state directory's logs, for a failed up.
func (c *localCluster) dumpLogs(t *testing.T) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(c.state, "logs", "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		t.Logf("--- %s\n%s", l, data)
	}
}

// running reports whether pid is a live process; a zombie (exited, not yet
// reaped by whoever inherited it) is not.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, so read after the last ')'.
	s := string(stat)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	fields := strings.Fields(rest)
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// processesMentioning lists live processes whose command line holds s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) || !running(pid) {
			continue
		}
		found = append(found, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return found
}

// freePorts finds n distinct ports free for TCP and UDP on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		u.Close()
		ports = append(ports, p)
	}
	return ports
}
