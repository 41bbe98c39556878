package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/examples/polyglot/loan"
)

// asMainEnv set to "1" makes the test binary run main: the test runs this
// binary as loand.
const asMainEnv = "LOAND_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPythonActivities runs loand dev (managed PostgreSQL) against
// scoring_server.py: two loan applications, each scored by the Python
// service (whose first answer per key is "lost": a 503 after the effect)
// and reviewed asynchronously (a 202, then a completion with the task
// token). Each run completes with the Python service's answers, and the
// service made exactly one effect per Idempotency-Key.
func TestPythonActivities(t *testing.T) {
	python := requirePython(t)
	requirePostgres(t)
	ctx := context.Background()

	harvestAddr := freeAddr(t)
	scoring := startScoring(t, python, "http://"+harvestAddr)
	startLoand(t, harvestAddr, scoring.url)

	c := client.New("http://" + harvestAddr)
	applications := client.WorkflowOf(c, loan.New(scoring.url).Workflow)
	apps := []loan.Application{
		{ApplicationID: "app-1", Applicant: "Ada Lovelace", AmountCents: 2_500_000},
		{ApplicationID: "app-2", Applicant: "Grace Hopper", AmountCents: 90_000_000},
	}
	runs := map[string]string{} // application id -> execution id
	for _, app := range apps {
		run, err := applications.StartIdempotent(ctx, app, "loan-"+app.ApplicationID)
		require.NoError(t, err)
		runs[app.ApplicationID] = run.ExecutionID
	}

	results := map[string]loan.Result{}
	for _, app := range apps {
		results[app.ApplicationID] = waitResult(t, applications, runs[app.ApplicationID])
	}
	// The Python service records a completion once Harvest answered it,
	// which may be just after the run closed.
	led := waitLedger(t, scoring.url, func(l ledger) bool { return len(l.Completions) == len(apps) })

	require.Len(t, led.Effects["score"], len(apps), "one scored key per run: %+v", led)
	require.Len(t, led.Effects["review"], len(apps), "one reviewed key per run: %+v", led)
	for _, app := range apps {
		id, res := runs[app.ApplicationID], results[app.ApplicationID]
		keys, attempts := activities(t, c, id)
		scoreKey, reviewKey := keys[loan.ScoreName], keys[loan.ReviewName]
		require.NotEmpty(t, scoreKey)
		require.NotEmpty(t, reviewKey)

		// Scored once although asked twice: the 503 after the effect made
		// Harvest retry with the same key, and the retry got the stored answer.
		require.Equal(t, 1, led.Effects["score"][scoreKey], "effects of %s", scoreKey)
		// (A third attempt is possible only if the second timed out on a
		// loaded machine; the key is the same on all of them.)
		seen := led.Attempts["score"][scoreKey]
		require.GreaterOrEqual(t, len(seen), 2, "attempts of %s", scoreKey)
		require.Equal(t, []string{"1", "2"}, seen[:2], "attempts of %s", scoreKey)
		require.Equal(t, len(seen), attempts[loan.ScoreName], "the score completed on its last attempt")
		var score loan.Score
		require.NoError(t, json.Unmarshal(led.Answers["score"][scoreKey], &score))
		require.Equal(t, app.Applicant, score.Applicant)
		require.GreaterOrEqual(t, score.Score, 300)
		require.LessOrEqual(t, score.Score, 850)

		// Reviewed once, asynchronously: a 202, then one completion with the
		// attempt's token that Harvest accepted for this run.
		require.Equal(t, 1, led.Effects["review"][reviewKey], "effects of %s", reviewKey)
		require.Equal(t, []string{"1"}, led.Attempts["review"][reviewKey], "attempts of %s", reviewKey)
		require.Equal(t, 1, attempts[loan.ReviewName])
		var review loan.Review
		require.NoError(t, json.Unmarshal(led.Answers["review"][reviewKey], &review))
		comp := led.completion(reviewKey)
		require.NotNil(t, comp, "no completion sent for %s: %+v", reviewKey, led.Completions)
		require.Equal(t, http.StatusOK, comp.Status, "Harvest's answer: %s", comp.Answer)
		var answer struct {
			ExecutionID string `json:"execution_id"`
			Attempt     int    `json:"attempt"`
			Duplicate   bool   `json:"duplicate"`
		}
		require.NoError(t, json.Unmarshal(comp.Answer, &answer), "%s", comp.Answer)
		require.Equal(t, id, answer.ExecutionID)
		require.Equal(t, 1, answer.Attempt)
		require.False(t, answer.Duplicate)

		// The run's output is the Python service's answers.
		require.Equal(t, loan.Result{ApplicationID: app.ApplicationID, ScoreID: score.ScoreID, Score: score.Score,
			ReviewID: review.ReviewID, Decision: review.Decision, Reviewer: "python"}, res)
		want := "referred"
		if score.Score >= 600 && app.AmountCents <= 5_000_000 {
			want = "approved"
		}
		require.Equal(t, want, res.Decision)
	}
}

// requirePython finds python3; this test does not skip without it.
func requirePython(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found on PATH: this test runs scoring_server.py with it. Install it " +
			"(Debian: apt-get install python3; ./scripts/test.sh does so when run as root)")
	}
	return python
}

// requirePostgres checks for the PostgreSQL server binaries loand dev runs.
func requirePostgres(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("initdb"); err == nil {
		return
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		return
	}
	t.Fatalf("no PostgreSQL server binaries (initdb) on PATH or in /usr/lib/postgresql/*/bin: " +
		"loand dev runs a managed PostgreSQL from them (./scripts/test.sh installs them when run as root)")
}

// scoringServer is a running scoring_server.py.
type scoringServer struct {
	url  string
	logs *syncBuffer
}

// startScoring runs scoring_server.py on a free port (it prints the port
// it bound), completing async reviews at harvestURL.
func startScoring(t *testing.T, python, harvestURL string) scoringServer {
	t.Helper()
	cmd := exec.Command(python, "scoring_server.py", "--port", "0", "--harvest-url", harvestURL, "--lose-first-answer")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("scoring_server.py's log:\n%s", logs)
		}
	})

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout) // keep the pipe drained
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatalf("scoring_server.py did not start in 30s; its log:\n%s", logs)
	}
	url, ok := strings.CutPrefix(line, "listening on ")
	if !ok {
		t.Fatalf("scoring_server.py did not say where it listens (first line %q); its log:\n%s", line, logs)
	}
	return scoringServer{url: url, logs: logs}
}

// startLoand runs this binary as loand dev on addr, with the scoring
// service at scoringURL; loopback is refused to activities unless allowed.
func startLoand(t *testing.T, addr, scoringURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	self, err := os.Executable()
	require.NoError(t, err)
	node := exec.CommandContext(ctx, self, "dev", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--http-addr", addr, "--callback-allow-cidr", "127.0.0.1/32")
	node.Env = append(os.Environ(), asMainEnv+"=1", "SCORING_URL="+scoringURL)
	logs := &syncBuffer{}
	node.Stdout, node.Stderr = logs, logs
	require.NoError(t, node.Start())
	t.Cleanup(func() {
		_ = node.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = node.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cancel()
			<-done
		}
		if t.Failed() {
			t.Logf("loand's log:\n%s", logs)
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if res, err := http.Get("http://" + addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("loand not ready in 2m; its log:\n%s", logs)
}

// waitResult waits for the run to complete and returns its output.
func waitResult(t *testing.T, h client.WorkflowHandle[loan.Application, loan.Result], id string) loan.Result {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		out, closed, err := h.Result(context.Background(), id, 10*time.Second)
		require.NoError(t, err)
		if closed {
			return out
		}
	}
	t.Fatalf("run %s still running after 2m", id)
	return loan.Result{}
}

// ledger is the answer of the scoring service's GET /effects.
type ledger struct {
	Effects     map[string]map[string]int             `json:"effects"`
	Attempts    map[string]map[string][]string        `json:"attempts"`
	Answers     map[string]map[string]json.RawMessage `json:"answers"`
	Completions []completion                          `json:"completions"`
}

type completion struct {
	Key     string          `json:"key"`
	Attempt string          `json:"attempt"`
	Status  int             `json:"status"`
	Answer  json.RawMessage `json:"answer"`
}

func (l ledger) completion(key string) *completion {
	var found *completion
	for i, c := range l.Completions {
		if c.Key == key {
			if found != nil {
				return nil // more than one: none is "the" completion
			}
			found = &l.Completions[i]
		}
	}
	return found
}

// waitLedger polls the scoring service's ledger until done holds.
func waitLedger(t *testing.T, url string, done func(ledger) bool) ledger {
	t.Helper()
	var l ledger
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(url + "/effects")
		require.NoError(t, err)
		l = ledger{}
		err = json.NewDecoder(res.Body).Decode(&l)
		res.Body.Close()
		require.NoError(t, err)
		if done(l) {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the scoring service's ledger did not settle in 30s: %+v", l)
	return l
}

// activities reads a run's history: the idempotency key each activity was
// scheduled with, and the attempt each completed on.
func activities(t *testing.T, c *client.Client, executionID string) (keys map[string]string, attempts map[string]int) {
	t.Helper()
	page, err := c.History(context.Background(), executionID, client.HistoryQuery{Limit: 1000})
	require.NoError(t, err)
	require.Nil(t, page.NextCursor)
	names := map[string]string{} // activity id -> name
	keys, attempts = map[string]string{}, map[string]int{}
	for _, e := range page.Events {
		switch harvest.EventType(e.Type) {
		case harvest.EventActivityScheduled:
			var d harvest.ActivityScheduledData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			names[d.ActivityID] = d.Name
			keys[d.Name] = d.IdempotencyKey
		case harvest.EventActivityCompleted:
			var d harvest.ActivityCompletedData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			attempts[names[d.ActivityID]] = d.Attempt
		}
	}
	return keys, attempts
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer a subprocess's output is copied into while
// the test may read it.
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
