package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPrivateHome runs the README's first commands as root from a clone
// inside a 0700 directory (root's home, typically), which the user
// postgres cannot search: ./scripts/run.sh serves a keyed start and stops
// on SIGINT, and scripts/local-cluster.sh up forms a cluster that serves
// and replays one, its PostgreSQL refusing local users without the
// password.
func TestPrivateHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test is about root running the scripts from a 0700 home, where PostgreSQL runs as the user postgres")
	}
	for _, tool := range []string{"bash", "curl", "git", "go", "su", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: %v", tool, err)
		}
	}
	if _, err := exec.LookPath("initdb"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
			t.Skip("no PostgreSQL server binaries (initdb)")
		}
	}
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no user postgres: %v", err)
	}
	if _, err := user.Lookup("nobody"); err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	t.Parallel()
	clone := cloneIntoPrivateDir(t)

	t.Run("RunScript", func(t *testing.T) {
		addr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
		rs := startRunScript(t, clone, addr)
		base := "http://" + addr
		rs.waitReady(t, base, 3*time.Minute)
		first := keyedStart(t, base, "")
		require.Equal(t, http.StatusCreated, first.status, "first keyed start: %s", first.raw)
		again := keyedStart(t, base, "")
		require.Equal(t, http.StatusOK, again.status, "keyed start again: %s", again.raw)
		require.Equal(t, first.executionID, again.executionID, "the same key, the same run")
		rs.interrupt(t, time.Minute)
		require.NoFileExists(t, filepath.Join(clone, ".harvest", "postgres", "postmaster.pid"), "PostgreSQL stopped with harvestd")
		require.Empty(t, processesMentioning(t, clone), "processes of run.sh left after SIGINT")
	})

	t.Run("LocalClusterScript", func(t *testing.T) {
		c := localClusterAt(t, clone, filepath.Join(clone, ".harvest-cluster"))
		t.Cleanup(func() {
			out, err := c.script(t, 2*time.Minute, "down")
			if err != nil {
				t.Errorf("local-cluster.sh down at cleanup: %v\n%s", err, out)
			}
			// PostgreSQL outside the state directory is not removed with it.
			env := readClusterEnv(t, c.state)
			if dir := env["PG_DIR"]; strings.HasPrefix(filepath.Base(dir), "harvest-cluster-") {
				require.NoError(t, os.RemoveAll(dir))
			}
		})
		out, err := c.script(t, 3*time.Minute, "up")
		if err != nil {
			c.dumpLogs(t)
		}
		require.NoError(t, err, "local-cluster.sh up:\n%s", out)

		env := readClusterEnv(t, c.state)
		pgDir := env["PG_DIR"]
		require.Regexp(t, `^`+regexp.QuoteMeta(pgUser.HomeDir)+`/harvest-cluster-[0-9a-f]{16}$`, pgDir,
			"PostgreSQL lives under postgres's home: cluster.env %v", env)
		info, err := os.Stat(pgDir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "%s mode", pgDir)
		require.Equal(t, pgUser.Uid, strconv.Itoa(int(info.Sys().(*syscall.Stat_t).Uid)), "%s owner", pgDir)
		require.NoFileExists(t, filepath.Join(pgDir, "initdb.password"), "initdb's copy of the password is removed")

		pwFile := filepath.Join(c.state, "pg.password")
		info, err = os.Stat(pwFile)
		require.NoError(t, err, "up creates the PostgreSQL password")
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s mode", pwFile)
		raw, err := os.ReadFile(pwFile)
		require.NoError(t, err)
		password := strings.TrimSpace(string(raw))
		require.Regexp(t, `^[0-9a-f]{64}$`, password)

		tokenRaw, err := os.ReadFile(filepath.Join(c.state, "admin.token"))
		require.NoError(t, err)
		token := strings.TrimSpace(string(tokenRaw))
		first := keyedStartWith(t, c.httpClient(t), c.base(1), token)
		require.Equal(t, http.StatusCreated, first.status, "keyed start via n1: %s", first.raw)
		again := keyedStartWith(t, c.httpClient(t), c.base(2), token)
		require.Equal(t, http.StatusOK, again.status, "keyed start via n2: %s", again.raw)
		require.Equal(t, first.executionID, again.executionID, "the same key, the same run")

		pgPort := env["PG_PORT"]
		t.Run("OtherUsersNeedThePassword", func(t *testing.T) {
			out, err := psqlAsNobody(t, pgPort, "")
			require.Error(t, err, "psql as nobody without the password: %s", out)
			require.Contains(t, out, "password", "refused for want of a password")
			out, err = psqlAsNobody(t, pgPort, password)
			require.NoError(t, err, "psql as nobody with the password: %s", out)
		})

		t.Run("PasswordInNoCommandLineOrLog", func(t *testing.T) {
			for name, pid := range c.pids(t, filepath.Join(pgDir, "data", "postmaster.pid")) {
				cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				require.NoError(t, err, "%s command line", name)
				require.NotContains(t, string(cmdline), password, "%s command line", name)
			}
			logs, err := filepath.Glob(filepath.Join(c.state, "logs", "*.log"))
			require.NoError(t, err)
			logs = append(logs, env["PG_LOG"])
			for _, l := range logs {
				data, err := os.ReadFile(l)
				require.NoError(t, err)
				require.NotContains(t, string(data), password, "%s", l)
			}
		})
	})
}

// cloneIntoPrivateDir clones the repository at its HEAD into a directory
// inside a fresh 0700 directory and returns the clone.
func cloneIntoPrivateDir(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	private := filepath.Join(t.TempDir(), "home")
	require.NoError(t, os.Mkdir(private, 0o700))
	require.NoError(t, os.Chmod(private, 0o700)) // whatever the umask
	clone := filepath.Join(private, "harvest")
	git := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// safe.directory: a CI checkout may belong to another user.
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "safe.directory=*"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	head := git("-C", root, "rev-parse", "HEAD")
	git("clone", "--quiet", "--no-checkout", root, clone)
	git("-C", clone, "checkout", "--quiet", "--detach", head)
	t.Logf("cloned %s at %s into %s (uncommitted changes are not in the clone)", root, head, clone)
	return clone
}

// runScript is ./scripts/run.sh running in a process group of its own, as
// from a terminal, so SIGINT goes to the group.
type runScript struct {
	cmd    *exec.Cmd
	log    string
	exited chan error
}

func startRunScript(t *testing.T, clone, addr string) *runScript {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "run.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	t.Cleanup(func() { logFile.Close() })
	cmd := exec.Command(filepath.Join(clone, "scripts", "run.sh"), "--http-addr", addr)
	cmd.Dir = clone
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	rs := &runScript{cmd: cmd, log: logPath, exited: make(chan error, 1)}
	go func() { rs.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-rs.exited:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-rs.exited
		}
	})
	return rs
}

func (rs *runScript) output() string {
	data, _ := os.ReadFile(rs.log)
	return string(data)
}

// waitReady polls base/readyz until it answers 200.
func (rs *runScript) waitReady(t *testing.T, base string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-rs.exited:
			rs.exited <- err
			t.Fatalf("run.sh exited before ready: %v\n%s", err, rs.output())
		default:
		}
		require.True(t, time.Now().Before(deadline), "run.sh not ready after %s:\n%s", timeout, rs.output())
		time.Sleep(200 * time.Millisecond)
	}
}

// interrupt sends SIGINT to the group and requires harvestd to stop
// cleanly: run.sh execs it, so its exit status is harvestd's, 0.
func (rs *runScript) interrupt(t *testing.T, timeout time.Duration) {
	t.Helper()
	require.NoError(t, syscall.Kill(-rs.cmd.Process.Pid, syscall.SIGINT))
	select {
	case err := <-rs.exited:
		rs.exited <- err
		require.NoError(t, err, "run.sh after SIGINT:\n%s", rs.output())
		require.Contains(t, rs.output(), "node stopped", "harvestd stops cleanly on SIGINT")
	case <-time.After(timeout):
		t.Fatalf("run.sh still runs %s after SIGINT:\n%s", timeout, rs.output())
	}
}

type startReply struct {
	status      int
	executionID string
	raw         string
}

// keyedStart is the README's keyed start of onboarding (Idempotency-Key
// k1), with a bearer token unless token is "".
func keyedStart(t *testing.T, base, token string) startReply {
	t.Helper()
	return keyedStartWith(t, &http.Client{Timeout: 30 * time.Second}, base, token)
}

// keyedStartWith is keyedStart sent with client.
func keyedStartWith(t *testing.T, client *http.Client, base, token string) startReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/harvest/workflows/onboarding/start",
		strings.NewReader(`{"input":{"user_id":1}}`))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "k1")
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var v struct {
		ExecutionID string `json:"execution_id"`
	}
	if resp.StatusCode < 300 {
		require.NoError(t, json.Unmarshal(body, &v), "%s", body)
		require.NotEmpty(t, v.ExecutionID, "%s", body)
	}
	return startReply{status: resp.StatusCode, executionID: v.ExecutionID, raw: string(body)}
}

// psqlAsNobody runs select 1 as the user nobody against 127.0.0.1:port,
// with PGPASSWORD when password is not "", never prompting.
func psqlAsNobody(t *testing.T, port, password string) (string, error) {
	t.Helper()
	psql := "/usr/bin/psql"
	if _, err := os.Stat(psql); err != nil {
		psql, err = exec.LookPath("psql")
		require.NoError(t, err, "psql")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := fmt.Sprintf(`%s -w -h 127.0.0.1 -p %s -U postgres -d postgres -tAc "select 1"`, psql, port)
	cmd := exec.CommandContext(ctx, "su", "nobody", "-s", "/bin/sh", "-c", script)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// readClusterEnv parses what local-cluster.sh up recorded in cluster.env.
func readClusterEnv(t *testing.T, state string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "cluster.env"))
	require.NoError(t, err)
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			env[k] = strings.Trim(v, `"`)
		}
	}
	require.NoError(t, sc.Err())
	return env
}
