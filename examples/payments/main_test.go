package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// asMainEnv set to "1" makes the test binary run main: the tests run this
// binary as payoutd.
const asMainEnv = "PAYOUTD_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// payoutd runs this binary as payoutd with args.
func payoutd(ctx context.Context, args ...string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	return cmd
}

var flagToken = regexp.MustCompile(`(?m)^\s+(--[a-z0-9-]+)`)

// helpFlags lists the flags a command's --help shows.
func helpFlags(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var flags []string
	for _, m := range flagToken.FindAllStringSubmatch(string(out), -1) {
		flags = append(flags, m[1])
	}
	sort.Strings(flags)
	require.NotEmpty(t, flags, "%s", out)
	return flags
}

// TestEveryHarvestdFlag builds harvestd from the module this example
// replaces and compares the flags of each command with payoutd's.
func TestEveryHarvestdFlag(t *testing.T) {
	harvestd := filepath.Join(t.TempDir(), "harvestd")
	build := exec.Command("go", "build", "-o", harvestd, "github.com/harvestd/harvest/cmd/harvestd")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, command := range []string{"dev", "agent"} {
		t.Run(command, func(t *testing.T) {
			want := helpFlags(t, exec.Command(harvestd, command, "--help"))
			got := helpFlags(t, payoutd(context.Background(), command, "--help"))
			require.Equal(t, want, got)
			require.Contains(t, got, "--data-dir")
		})
	}
}

// TestREADMESession runs payoutd dev (managed PostgreSQL) and the
// README's curl session against it, request for request.
func TestREADMESession(t *testing.T) {
	if _, err := exec.LookPath("initdb"); err != nil && !hasPGBin() {
		t.Skip("no PostgreSQL server binaries (initdb) on PATH or in /usr/lib/postgresql/*/bin")
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := freeAddr(t)
	node := payoutd(ctx, "dev", "--data-dir", filepath.Join(t.TempDir(), "data"), "--http-addr", addr)
	var logs bytes.Buffer
	node.Stdout, node.Stderr = &logs, &logs
	require.NoError(t, node.Start())
	t.Cleanup(func() {
		_ = node.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = node.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cancel()
		}
	})
	h := "http://" + addr + "/api/harvest"
	waitReady(t, "http://"+addr+"/readyz", &logs)

	start := `{"input": {"payout_id": "po-1", "amount_cents": 125000, "recipient": "acct-9", "cooling_off_ms": 500}}`
	first := send(t, "POST", h+"/workflows/payout/start", start, "Idempotency-Key", "payout-po-1")
	require.Equal(t, http.StatusCreated, first.status, "%s", first.raw)
	id := first.body["execution_id"].(string)
	again := send(t, "POST", h+"/workflows/payout/start", start, "Idempotency-Key", "payout-po-1")
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, id, again.body["execution_id"])
	require.Equal(t, true, again.body["deduplicated"])

	typo := send(t, "POST", h+"/workflows/"+id+"/signal/aproved", `{"by": "ann"}`)
	require.Equal(t, http.StatusNotFound, typo.status, "%s", typo.raw)
	require.Equal(t, "unknown_signal", typo.body["code"])
	wrong := send(t, "POST", h+"/workflows/"+id+"/signal/approved", `"yes"`)
	require.Equal(t, http.StatusUnprocessableEntity, wrong.status, "%s", wrong.raw)
	require.Equal(t, "invalid_payload", wrong.body["code"])

	ok := send(t, "POST", h+"/workflows/"+id+"/signal/approved", `{"by": "ann"}`, "Idempotency-Key", "approval-po-1")
	require.Equal(t, http.StatusAccepted, ok.status, "%s", ok.raw)
	require.Equal(t, true, ok.body["signal_delivered"])
	dup := send(t, "POST", h+"/workflows/"+id+"/signal/approved", `{"by": "ann"}`, "Idempotency-Key", "approval-po-1")
	require.Equal(t, false, dup.body["signal_delivered"])

	result := send(t, "GET", h+"/workflows/"+id+"/result?wait=20s", "")
	require.Equal(t, http.StatusOK, result.status, "%s", result.raw)
	require.Equal(t, "COMPLETED", result.body["state"], "%s", result.raw)
	output := result.body["output"].(map[string]any)
	require.Equal(t, "paid", output["status"])
	require.Equal(t, "ann", output["approved_by"])
}

type answer struct {
	status int
	body   map[string]any
	raw    []byte
}

func send(t *testing.T, method, url, body string, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	a := answer{status: res.StatusCode, raw: raw}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &a.body), "%s", raw)
	}
	return a
}

func waitReady(t *testing.T, url string, logs *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("payoutd not ready in 2m; its log:\n%s", logs)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func hasPGBin() bool {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	return len(m) > 0
}
