package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// orderInput starts a demo order run that waits for the "approved" signal.
const orderInput = `{"input": {"order_id": "o-1", "amount_cents": 1299, "customer_id": "c-1", "sleep_ms": 10}}`

// TestSeedChapter replays every request of the idempotency chapter
// (shared/SEED-idempotency.md) against a harvestd on its managed PostgreSQL.
func TestSeedChapter(t *testing.T) {
	t.Parallel()
	d := setup(t)

	t.Run("KeyedStartRetryIsNoOp", func(t *testing.T) {
		t.Parallel()
		const body = `{"input": {"user_id": 42}}`
		first := d.post(t, "/workflows/onboarding/start", body, "Idempotency-Key", "webhook-evt-abc123").expect(t, http.StatusCreated)
		require.Equal(t, true, first["started_fresh"])
		require.Equal(t, false, first["deduplicated"])
		require.Equal(t, "onboarding", first["workflow_name"])
		id := first["execution_id"].(string)

		retry := d.post(t, "/workflows/onboarding/start", body, "Idempotency-Key", "webhook-evt-abc123").expect(t, http.StatusOK)
		require.Equal(t, id, retry["execution_id"])
		require.Equal(t, true, retry["deduplicated"])
		require.Equal(t, false, retry["started_fresh"])
		require.Equal(t, first["workflow_id"], retry["workflow_id"])

		result := d.waitResult(t, id)
		require.Equal(t, "COMPLETED", result["state"], "result: %v", result)
		types := d.eventTypes(t, id)
		require.Equal(t, 1, count(types, "WorkflowStarted"), "history: %v", types)
		require.Equal(t, 1, count(types, "ActivityScheduled"), "one run, one task: %v", types)
	})

	t.Run("BodyKeyDedups", func(t *testing.T) {
		t.Parallel()
		const body = `{"input": {"user_id": 7}, "idempotency_key": "body-key-1"}`
		first := d.post(t, "/workflows/onboarding/start", body).expect(t, http.StatusCreated)
		require.Equal(t, true, first["started_fresh"])
		require.Equal(t, false, first["deduplicated"])
		retry := d.post(t, "/workflows/onboarding/start", body).expect(t, http.StatusOK)
		require.Equal(t, first["execution_id"], retry["execution_id"])
		require.Equal(t, true, retry["deduplicated"])
		// A body-key replay answers before field validation (step 3 < 4).
		bad := d.post(t, "/workflows/onboarding/start", `{"idempotency_key": "body-key-1", "reuse_policy": "bogus"}`).expect(t, http.StatusOK)
		require.Equal(t, first["execution_id"], bad["execution_id"])
		require.Equal(t, 1, d.countEvents(t, first["execution_id"].(string), "WorkflowStarted"))
	})

	t.Run("HeaderBeatsBody", func(t *testing.T) {
		t.Parallel()
		first := d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 1}}`, "Idempotency-Key", "hb-k1").expect(t, http.StatusCreated)
		both := d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 1}, "idempotency_key": "hb-k2"}`,
			"Idempotency-Key", "hb-k1").expect(t, http.StatusOK)
		require.Equal(t, first["execution_id"], both["execution_id"], "the header key K1 decides")
		require.Equal(t, true, both["deduplicated"])
		// The body key was ignored, so it claimed nothing.
		k2 := d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 1}, "idempotency_key": "hb-k2"}`).expect(t, http.StatusCreated)
		require.NotEqual(t, first["execution_id"], k2["execution_id"])
	})

	t.Run("MalformedBodyReplaysCommittedHeaderKey", func(t *testing.T) {
		t.Parallel()
		first := d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}}`, "Idempotency-Key", "mal-k").expect(t, http.StatusCreated)
		for name, body := range map[string]string{
			"Truncated":    `{"input": {"user_id": 42}`,
			"UnknownField": `{"input": {"user_id": 42}, "tightened": true}`,
			"WrongType":    `{"input": {"user_id": 42}, "queue": 5}`,
			"NotAnObject":  `[1, 2]`,
			"BadPolicy":    `{"input": {"user_id": 42}, "reuse_policy": "bogus"}`,
		} {
			t.Run(name, func(t *testing.T) {
				again := d.post(t, "/workflows/onboarding/start", body, "Idempotency-Key", "mal-k").expect(t, http.StatusOK)
				require.Equal(t, first["execution_id"], again["execution_id"])
				require.Equal(t, true, again["deduplicated"])
				require.Equal(t, false, again["started_fresh"])
			})
		}
		require.Equal(t, 1, d.countEvents(t, first["execution_id"].(string), "WorkflowStarted"))
	})

	t.Run("MalformedBodyWithoutClaimIs400", func(t *testing.T) {
		t.Parallel()
		d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}`).expectError(t, http.StatusBadRequest, "invalid_json")
		d.post(t, "/workflows/onboarding/start", `{"input": 1, "queue": 5}`).expectError(t, http.StatusBadRequest, "invalid_json")
		// A header key that claimed nothing yet gets the same rejection.
		d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}`, "Idempotency-Key", "never-used").
			expectError(t, http.StatusBadRequest, "invalid_json")
	})

	t.Run("EmptyKeyIs400", func(t *testing.T) {
		t.Parallel()
		d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}}`, "Idempotency-Key", "").
			expectError(t, http.StatusBadRequest, "invalid_argument")
		d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}, "idempotency_key": ""}`).
			expectError(t, http.StatusBadRequest, "invalid_argument")
	})

	t.Run("KeyWithThrottleIs400", func(t *testing.T) {
		t.Parallel()
		d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}, "throttle": "10s"}`, "Idempotency-Key", "thr-k").
			expectError(t, http.StatusBadRequest, "invalid_argument")
		d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}, "throttle": "10s", "idempotency_key": "thr-k"}`).
			expectError(t, http.StatusBadRequest, "invalid_argument")
		// The rejected requests claimed nothing.
		d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}}`, "Idempotency-Key", "thr-k").expect(t, http.StatusCreated)
	})

	t.Run("StartWithoutKeyOmitsDedupFields", func(t *testing.T) {
		t.Parallel()
		body := d.post(t, "/workflows/onboarding/start", `{"input": {"user_id": 42}}`).expect(t, http.StatusCreated)
		require.NotContains(t, body, "started_fresh")
		require.NotContains(t, body, "deduplicated")
		require.NotEmpty(t, body["execution_id"])
		require.Equal(t, "RUNNING", body["state"])
	})

	t.Run("UnknownWorkflowIs404", func(t *testing.T) {
		t.Parallel()
		d.post(t, "/workflows/nope/start", `{}`).expectError(t, http.StatusNotFound, "unknown_workflow")
		d.post(t, "/workflows/nope/start", `{}`, "Idempotency-Key", "nope-k").expectError(t, http.StatusNotFound, "unknown_workflow")
	})

	t.Run("KeyedSignals", func(t *testing.T) {
		t.Parallel()
		run := d.post(t, "/workflows/order/start", orderInput).expect(t, http.StatusCreated)
		id := run["execution_id"].(string)
		signal := func(t *testing.T, name, query string, headers ...string) reply {
			t.Helper()
			return d.post(t, "/workflows/"+id+"/signal/"+name+query, `{"note": "hi"}`, headers...)
		}
		delivered := func(t *testing.T, r reply, want bool) {
			t.Helper()
			body := r.expect(t, http.StatusAccepted)
			require.Equal(t, true, body["ok"])
			require.Equal(t, id, body["execution_id"])
			require.Equal(t, want, body["signal_delivered"], "answer: %s", r.raw)
		}

		t.Run("HeaderKeyTwice", func(t *testing.T) {
			delivered(t, signal(t, "note", "", "Idempotency-Key", "sig-h1"), true)
			delivered(t, signal(t, "note", "", "Idempotency-Key", "sig-h1"), false)
			require.Equal(t, 1, d.countEvents(t, id, "SignalReceived"))
		})
		t.Run("QueryKeyTwice", func(t *testing.T) {
			delivered(t, signal(t, "note", "?idempotency_key=sig-q1"), true)
			delivered(t, signal(t, "note", "?idempotency_key=sig-q1"), false)
			require.Equal(t, 2, d.countEvents(t, id, "SignalReceived"))
		})
		t.Run("HeaderBeatsQuery", func(t *testing.T) {
			delivered(t, signal(t, "note", "?idempotency_key=sig-q2", "Idempotency-Key", "sig-h1"), false)
			delivered(t, signal(t, "note", "?idempotency_key=sig-q2"), true)
			require.Equal(t, 3, d.countEvents(t, id, "SignalReceived"))
		})
		t.Run("EmptyKeyIs400", func(t *testing.T) {
			signal(t, "note", "", "Idempotency-Key", "").expectError(t, http.StatusBadRequest, "invalid_argument")
			signal(t, "note", "?idempotency_key=").expectError(t, http.StatusBadRequest, "invalid_argument")
		})
		t.Run("ApproveAndComplete", func(t *testing.T) {
			r := d.post(t, "/workflows/"+id+"/signal/approved", `{"by": "alice"}`, "Idempotency-Key", "sig-approve")
			delivered(t, r, true)
			result := d.waitResult(t, id)
			require.Equal(t, "COMPLETED", result["state"], "result: %v", result)
			require.Equal(t, "approved", result["output"].(map[string]any)["status"])
		})
		t.Run("AfterCompletion", func(t *testing.T) {
			before := d.countEvents(t, id, "SignalReceived")
			delivered(t, signal(t, "note", "", "Idempotency-Key", "sig-h1"), false)
			delivered(t, signal(t, "note", "?idempotency_key=sig-q1"), false)
			delivered(t, d.post(t, "/workflows/"+id+"/signal/approved", `{"by": "alice"}`, "Idempotency-Key", "sig-approve"), false)
			for _, r := range []reply{
				signal(t, "note", "", "Idempotency-Key", "sig-new"),
				signal(t, "note", "?idempotency_key=sig-new-q"),
				signal(t, "note", ""),
			} {
				body := r.expectError(t, http.StatusConflict, "execution_terminal")
				require.Equal(t, id, body["execution_id"])
				require.Equal(t, "COMPLETED", body["state"])
			}
			require.Equal(t, before, d.countEvents(t, id, "SignalReceived"), "no event after completion")
		})
	})

	t.Run("SignalWithStartKeyRetried", func(t *testing.T) {
		t.Parallel()
		const body = `{"workflow_id": "order-sws-1", "signal_name": "note", "signal_payload": {"n": 1},
			"input": {"order_id": "o-2", "amount_cents": 500, "customer_id": "c-2"}, "idempotency_key": "sws-k1"}`
		first := d.post(t, "/workflows/order/signal-with-start", body).expect(t, http.StatusCreated)
		require.Equal(t, true, first["started_fresh"])
		require.Equal(t, true, first["signal_delivered"])
		require.Equal(t, "order-sws-1", first["workflow_id"])
		retry := d.post(t, "/workflows/order/signal-with-start", body).expect(t, http.StatusOK)
		require.Equal(t, first["execution_id"], retry["execution_id"])
		require.Equal(t, false, retry["started_fresh"])
		require.Equal(t, false, retry["signal_delivered"])

		id := first["execution_id"].(string)
		require.Equal(t, 1, d.countEvents(t, id, "WorkflowStarted"))
		require.Equal(t, 1, d.countEvents(t, id, "SignalReceived"))
		list := d.get(t, "/workflows?workflow_name=order&workflow_id=order-sws-1").expect(t, http.StatusOK)
		require.Len(t, list["workflows"], 1, "one run: %v", list)
	})
}

// TestConcurrentKeyedStarts: N simultaneous same-key starts create exactly
// one execution.
func TestConcurrentKeyedStarts(t *testing.T) {
	t.Parallel()
	d := setup(t)
	const n = 50
	replies := make([]reply, n)
	errs := make([]error, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			replies[i], errs[i] = d.do(ctx, http.MethodPost, "/workflows/onboarding/start", `{"input": {"user_id": 42}}`,
				"Idempotency-Key", "concurrent-evt-1")
		})
	}
	close(gate)
	wg.Wait()

	created := 0
	for i := range n {
		require.NoError(t, errs[i])
		r := replies[i]
		require.Contains(t, []int{http.StatusCreated, http.StatusOK}, r.status, "answer: %s", r.raw)
		require.Equal(t, replies[0].body["execution_id"], r.body["execution_id"])
		require.Equal(t, r.status == http.StatusCreated, r.body["started_fresh"])
		require.Equal(t, r.status == http.StatusOK, r.body["deduplicated"])
		if r.status == http.StatusCreated {
			created++
		}
	}
	require.Equal(t, 1, created)
	id := replies[0].body["execution_id"].(string)
	require.Equal(t, 1, d.countEvents(t, id, "WorkflowStarted"))
	list := d.get(t, "/workflows?workflow_name=onboarding").expect(t, http.StatusOK)
	require.Len(t, list["workflows"], 1, "one execution: %v", list)
}

// TestGracefulStopAndRestart: SIGTERM stops harvestd cleanly, and a
// restart on the same data dir finds the earlier run and carries it on.
func TestGracefulStopAndRestart(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	first := startDaemon(t, dir)
	run := first.post(t, "/workflows/order/start", orderInput).expect(t, http.StatusCreated)
	id := run["execution_id"].(string)
	nodeID, err := os.ReadFile(filepath.Join(dir, "node-id"))
	require.NoError(t, err)

	first.stop(t)
	out := first.out.String()
	require.Contains(t, out, `"node ready"`)
	require.Contains(t, out, `"node stopped"`)

	second := startDaemon(t, dir)
	desc := second.get(t, "/workflows/"+id).expect(t, http.StatusOK)
	exec := desc["execution"].(map[string]any)
	require.Equal(t, id, exec["execution_id"])
	require.Equal(t, "RUNNING", exec["state"])
	again, err := os.ReadFile(filepath.Join(dir, "node-id"))
	require.NoError(t, err)
	require.Equal(t, string(nodeID), string(again), "the node keeps its id")

	sig := second.post(t, "/workflows/"+id+"/signal/approved", `{"by": "bob"}`).expect(t, http.StatusAccepted)
	require.Equal(t, true, sig["signal_delivered"])
	result := second.waitResult(t, id)
	require.Equal(t, "COMPLETED", result["state"], "result: %v", result)
	require.Equal(t, "bob", result["output"].(map[string]any)["approver"])
	second.stop(t)
}

// TestNoPostgresBinaries: without PostgreSQL binaries harvestd fails fast
// with one clear line.
func TestNoPostgresBinaries(t *testing.T) {
	t.Parallel()
	stderr, err := runToExit(t, "dev", "--data-dir", filepath.Join(testDir(t), "data"),
		"--http-addr", "127.0.0.1:0", "--pg-bin-dir", "/nonexistent")
	requireFailed(t, err, stderr)
	require.Contains(t, stderr, "harvestd: no PostgreSQL binaries")
	require.Contains(t, stderr, "--pg-bin-dir")
}

// TestUnusableDataDir: a data dir that is a file fails fast with one clear
// line.
func TestUnusableDataDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(testDir(t), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	stderr, err := runToExit(t, "dev", "--data-dir", file, "--http-addr", "127.0.0.1:0")
	requireFailed(t, err, stderr)
	require.Contains(t, stderr, "harvestd: data dir not usable")
	require.Contains(t, stderr, "--data-dir")
}

// runToExit runs harvestd to its end and returns its stderr.
func runToExit(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runToExitEnv(t, nil, args...)
}

// runToExitEnv is runToExit with extra environment variables.
func runToExitEnv(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harvestdBin, args...)
	cmd.Env = append(childEnv(), env...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "harvestd did not exit in time; stderr:\n%s", stderr.String())
	return stderr.String(), err
}

// requireFailed requires a non-zero exit whose last stderr line is the
// error.
func requireFailed(t *testing.T, err error, stderr string) {
	t.Helper()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "want a non-zero exit, got %v; stderr:\n%s", err, stderr)
	require.NotZero(t, exit.ExitCode())
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.True(t, strings.HasPrefix(lines[len(lines)-1], "harvestd: "), "last stderr line is the error: %q", stderr)
}

func count(types []string, want string) int {
	n := 0
	for _, typ := range types {
		if typ == want {
			n++
		}
	}
	return n
}
