package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// orderInput completes the demo order workflow 10 ms after approval.
const orderInput = `{"order_id":"o-1","amount_cents":1250,"customer_id":"c-1","sleep_ms":10}`

// testBundle is the node harvestctl talks to: one engine + API on its own
// database, or a node of a raft cluster.
type testBundle struct {
	url  string        // --addr
	pool *pgxpool.Pool // the shard database
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return setupWith(t, api.Config{})
}

// setupWith is setup with the API configured by cfg.
func setupWith(t *testing.T, cfg api.Config) *testBundle {
	t.Helper()
	return setupEngine(t, func(*engine.Engine, *pgxpool.Pool) api.Config { return cfg })
}

// setupEngine is setup with the API configured by config, which sees the
// engine and its database.
func setupEngine(t *testing.T, config func(*engine.Engine, *pgxpool.Pool) api.Config) *testBundle {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(demo.NewServices()).Register(reg))
	pool := pgtest.NewPool(t)
	e, err := engine.New(pool, reg, engine.Config{ShardID: 0, NodeID: "t", PollInterval: 20 * time.Millisecond,
		Logger: zerolog.Nop()})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(e.Stop)
	srv, err := api.New(config(e, pool), api.SingleShard(e))
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testBundle{url: hs.URL, pool: pool}
}

// ctlResult is one run of the CLI.
type ctlResult struct {
	code   int
	stdout string
	stderr string
}

// ctl runs harvestctl in process against the bundle's node. The app is
// never run from two goroutines at once: urfave/cli keeps package state.
func (b *testBundle) ctl(t *testing.T, args ...string) ctlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"harvestctl", "--addr", b.url}, args...), &out, &errOut)
	return ctlResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok runs the CLI and requires success.
func (b *testBundle) ok(t *testing.T, args ...string) string {
	t.Helper()
	r := b.ctl(t, args...)
	require.Equal(t, 0, r.code, "harvestctl %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	require.Empty(t, r.stderr)
	return r.stdout
}

// okJSON runs the CLI with --output json and decodes its output.
func (b *testBundle) okJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := b.ok(t, append([]string{"--output", "json"}, args...)...)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), "output: %s", out)
	require.Contains(t, out, "\n  \"", "the JSON is pretty-printed")
	return m
}

// cell returns the value of the "label  value" row of a table.
func cell(t *testing.T, table, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + `  +(.*?)\s*$`).FindStringSubmatch(table)
	require.NotNil(t, m, "no %q row in:\n%s", label, table)
	return m[1]
}

// rows returns the table rows whose first column is first, split on runs
// of two or more spaces.
func rows(table, first string) [][]string {
	var out [][]string
	for _, line := range strings.Split(table, "\n") {
		cols := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		if cols[0] == first {
			out = append(out, cols)
		}
	}
	return out
}

func events(t *testing.T, page map[string]any, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range page["events"].([]any) {
		ev := e.(map[string]any)
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// TestWorkflowLifecycle drives one order run through the CLI, in both
// output formats. Subtests run in order and share the run.
func TestWorkflowLifecycle(t *testing.T) {
	b := setup(t)
	var id string

	t.Run("StartWithKeyTwiceDeduplicates", func(t *testing.T) {
		first := b.okJSON(t, "workflow", "start", "order", "--idempotency-key", "evt-1", "--input-json", orderInput,
			"--memo-json", `{"source":"test"}`)
		id, _ = first["execution_id"].(string)
		_, err := uuid.Parse(id)
		require.NoError(t, err)
		require.Equal(t, true, first["started_fresh"])
		require.Equal(t, false, first["deduplicated"])
		require.Equal(t, "order", first["workflow_name"])

		table := b.ok(t, "workflow", "start", "order", "--idempotency-key", "evt-1", "--input-json", orderInput)
		require.Equal(t, id, cell(t, table, "Execution ID"))
		require.Equal(t, "true", cell(t, table, "Deduplicated"))
		require.Equal(t, "false", cell(t, table, "Started fresh"))
		require.Equal(t, "order", cell(t, table, "Workflow"))

		again := b.okJSON(t, "workflow", "start", "order", "--idempotency-key", "evt-1", "--input-json", `{"changed":true}`)
		require.Equal(t, id, again["execution_id"])
		require.Equal(t, true, again["deduplicated"])
	})

	t.Run("SignalWithKeyTwiceDeliversOnce", func(t *testing.T) {
		table := b.ok(t, "workflow", "signal", id, "approved", "--payload-json", `{"by":"ann"}`, "--idempotency-key", "sig-1")
		require.Equal(t, id, cell(t, table, "Execution ID"))
		require.Equal(t, "true", cell(t, table, "Signal delivered"))

		dup := b.okJSON(t, "workflow", "signal", id, "approved", "--payload-json", `{"by":"bob"}`, "--idempotency-key", "sig-1")
		require.Equal(t, false, dup["signal_delivered"])
		require.Equal(t, id, dup["execution_id"])
	})

	t.Run("ResultWaitsForCompletion", func(t *testing.T) {
		res := b.okJSON(t, "workflow", "result", id, "--wait", "20s")
		require.Equal(t, "COMPLETED", res["state"], "result: %v", res)
		require.Equal(t, map[string]any{"charge_id": res["output"].(map[string]any)["charge_id"], "status": "approved", "approver": "ann"},
			res["output"])

		table := b.ok(t, "workflow", "result", id)
		require.Equal(t, "COMPLETED", cell(t, table, "State"))
		require.Contains(t, cell(t, table, "Output"), `"approver":"ann"`)
	})

	t.Run("Query", func(t *testing.T) {
		table := b.ok(t, "workflow", "query", id, "status")
		require.Equal(t, `"approved by ann"`, cell(t, table, "Result"))
		r := b.ctl(t, "workflow", "query", id, "nope")
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "unknown_query")
	})

	t.Run("Describe", func(t *testing.T) {
		d := b.okJSON(t, "workflow", "describe", id)
		x := d["execution"].(map[string]any)
		require.Equal(t, id, x["execution_id"])
		require.Equal(t, "COMPLETED", x["state"])
		require.Equal(t, map[string]any{"source": "test"}, x["memo"])
		require.Equal(t, "evt-1", x["idempotency_key"])
		require.NotEmpty(t, d["history"])

		table := b.ok(t, "workflow", "describe", id)
		require.Equal(t, id, cell(t, table, "Execution ID"))
		require.Equal(t, "order", cell(t, table, "Workflow"))
		require.Equal(t, "COMPLETED", cell(t, table, "State"))
		require.Equal(t, "evt-1", cell(t, table, "Idempotency key"))
		require.Len(t, rows(table, "EVENT ID"), 1, "one history header")
		require.Len(t, rows(table, "0"), 1, "event 0 is listed:\n%s", table)
		require.Equal(t, "WorkflowStarted", rows(table, "0")[0][1])
	})

	t.Run("HistoryHasOneSignalReceivedForTheKey", func(t *testing.T) {
		page := b.okJSON(t, "workflow", "history", id)
		sigs := events(t, page, "SignalReceived")
		require.Len(t, sigs, 1)
		data := sigs[0]["data"].(map[string]any)
		require.Equal(t, "sig-1", data["idempotency_key"])
		require.Equal(t, map[string]any{"by": "ann"}, data["payload"])
		require.Len(t, events(t, page, "WorkflowCompleted"), 1)

		filtered := b.okJSON(t, "workflow", "history", id, "--event-type", "SignalReceived")
		require.Len(t, filtered["events"], 1)

		table := b.ok(t, "workflow", "history", id, "--event-type", "SignalReceived", "--event-type", "WorkflowStarted")
		var types []string
		for _, line := range strings.Split(table, "\n") {
			if cols := strings.Fields(line); len(cols) > 1 && (cols[1] == "SignalReceived" || cols[1] == "WorkflowStarted") {
				types = append(types, cols[1])
			}
		}
		require.Equal(t, []string{"WorkflowStarted", "SignalReceived"}, types, table)
	})

	t.Run("HistoryPages", func(t *testing.T) {
		first := b.okJSON(t, "workflow", "history", id, "--limit", "2")
		require.Len(t, first["events"], 2)
		next := first["next_cursor"].(float64)
		require.Equal(t, float64(1), next)
		second := b.okJSON(t, "workflow", "history", id, "--limit", "2", "--after", "1")
		require.Equal(t, float64(2), second["events"].([]any)[0].(map[string]any)["event_id"])

		table := b.ok(t, "workflow", "history", id, "--limit", "2")
		require.Contains(t, table, "next page: --after 1")

		all := b.okJSON(t, "workflow", "history", id, "--limit", "2", "--all")
		require.Nil(t, all["next_cursor"])
		require.Len(t, all["events"], int(all["total_events"].(float64)))
		for i, ev := range all["events"].([]any) {
			require.Equal(t, float64(i), ev.(map[string]any)["event_id"])
		}
	})

	t.Run("List", func(t *testing.T) {
		page := b.okJSON(t, "workflow", "list", "--workflow-name", "order", "--state", "COMPLETED")
		wfs := page["workflows"].([]any)
		require.Len(t, wfs, 1)
		require.Equal(t, id, wfs[0].(map[string]any)["execution_id"])

		table := b.ok(t, "workflow", "list")
		got := rows(table, id)
		require.Len(t, got, 1, table)
		require.Equal(t, []string{id, "order"}, got[0][:2])
		require.Equal(t, "COMPLETED", got[0][3])
		require.Len(t, rows(table, "EXECUTION ID"), 1)

		none := b.okJSON(t, "workflow", "list", "--state", "RUNNING")
		require.Empty(t, none["workflows"])

		created := wfs[0].(map[string]any)["created_at"].(string)
		after := b.okJSON(t, "workflow", "list", "--started-after", created, "--counts")
		require.Len(t, after["workflows"], 1)
		require.Equal(t, float64(1), after["counts"].(map[string]any)["COMPLETED"])
		before := b.okJSON(t, "workflow", "list", "--started-before", created)
		require.Empty(t, before["workflows"], "before is exclusive")
		require.Contains(t, b.ok(t, "workflow", "list", "--counts"), "counts: CANCELLED 0, COMPLETED 1,")
		bad := b.ctl(t, "workflow", "list", "--started-after", "yesterday")
		require.NotZero(t, bad.code)
		require.Contains(t, bad.stderr, "--started-after \"yesterday\" is not an RFC 3339 time")
	})

	t.Run("ClosedRunRefusesNewSignalAndCancel", func(t *testing.T) {
		r := b.ctl(t, "workflow", "signal", id, "approved", "--idempotency-key", "sig-2")
		require.Equal(t, 1, r.code)
		require.Regexp(t, `^error: .+ \(execution_terminal, HTTP 409\)\n$`, r.stderr)
		require.Empty(t, r.stdout)

		r = b.ctl(t, "workflow", "cancel", id, "--reason", "late")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "(execution_terminal, HTTP 409)")

		term := b.okJSON(t, "workflow", "terminate", id, "--reason", "late")
		require.Equal(t, false, term["newly_terminated"])
		require.Equal(t, "COMPLETED", term["state"])
	})
}

func TestSignalWithStartCancelAndTerminate(t *testing.T) {
	b := setup(t)

	first := b.okJSON(t, "workflow", "signal-with-start", "order", "--workflow-id", "ord-7", "--signal", "approved",
		"--signal-payload-json", `{"by":"cy"}`, "--input-json", `{"order_id":"o-7","approval_timeout_ms":600000}`, "--idempotency-key", "sws-1")
	id := first["execution_id"].(string)
	require.Equal(t, true, first["started_fresh"])
	require.Equal(t, true, first["signal_delivered"])
	require.Equal(t, "ord-7", first["workflow_id"])

	// Flags may follow the argument; the key makes this a duplicate.
	table := b.ok(t, "workflow", "signal-with-start", "order", "--workflow-id", "ord-7", "--signal", "approved", "--idempotency-key", "sws-1")
	require.Equal(t, id, cell(t, table, "Execution ID"))
	require.Equal(t, "false", cell(t, table, "Started fresh"))
	require.Contains(t, cell(t, table, "Signal delivered"), "false")

	// An order without an approval waits; result reports it still runs.
	waiting := b.okJSON(t, "workflow", "start", "order", "--workflow-id", "ord-8", "--input-json", `{"order_id":"o-8"}`)
	wid := waiting["execution_id"].(string)
	_, hasFresh := waiting["started_fresh"]
	require.False(t, hasFresh, "an unkeyed start omits started_fresh")
	r := b.ctl(t, "workflow", "result", wid, "--wait", "100ms")
	require.Equal(t, exitStillRunning, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "still running")
	require.Empty(t, r.stdout)

	table = b.ok(t, "workflow", "cancel", wid, "--reason", "customer left")
	require.Equal(t, "RUNNING", cell(t, table, "State"), "a cancel is answered once recorded")
	require.Equal(t, "true", cell(t, table, "Cancel requested"))
	require.Equal(t, "true", cell(t, table, "Newly cancelled"))
	require.Equal(t, "customer left", cell(t, table, "Reason"))
	closed := b.okJSON(t, "workflow", "result", wid, "--wait", "20s")
	require.Equal(t, "CANCELLED", closed["state"])

	// reject_duplicate refuses the closed run's id.
	r = b.ctl(t, "workflow", "start", "order", "--workflow-id", "ord-8", "--reuse-policy", "reject_duplicate")
	require.Equal(t, 1, r.code)
	require.Regexp(t, `^error: .+ \(conflict, HTTP 409\)\n$`, r.stderr)

	// allow_duplicate attaches to it; a conflict policy brings started_fresh.
	attached := b.okJSON(t, "workflow", "start", "order", "--workflow-id", "ord-8", "--conflict-policy", "unspecified")
	require.Equal(t, wid, attached["execution_id"])
	require.Equal(t, false, attached["started_fresh"])
	_, hasDedup := attached["deduplicated"]
	require.False(t, hasDedup, "an unkeyed start omits deduplicated")

	running := b.okJSON(t, "workflow", "start", "order", "--workflow-id", "ord-9", "--input-json", `{"order_id":"o-9"}`)
	term := b.okJSON(t, "workflow", "terminate", running["execution_id"].(string), "--reason", "ops")
	require.Equal(t, true, term["newly_terminated"])
	require.Equal(t, "TERMINATED", term["state"])
	require.Equal(t, "ops", term["reason"])
}

func TestErrors(t *testing.T) {
	b := setup(t)

	t.Run("UnknownExecutionIsExitOneWithServerMessage", func(t *testing.T) {
		r := b.ctl(t, "workflow", "describe", uuid.NewString())
		require.Equal(t, 1, r.code)
		require.Equal(t, "error: execution not found (not_found, HTTP 404)\n", r.stderr)
		require.Empty(t, r.stdout)
	})

	t.Run("JSONOutputChangesNothingOnError", func(t *testing.T) {
		r := b.ctl(t, "--output", "json", "workflow", "describe", uuid.NewString())
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "(not_found, HTTP 404)")
		require.Empty(t, r.stdout)
	})

	t.Run("UnknownWorkflow", func(t *testing.T) {
		r := b.ctl(t, "workflow", "start", "nope")
		require.Equal(t, 1, r.code)
		require.Regexp(t, `^error: .*nope.* \(unknown_workflow, HTTP 404\)\n$`, r.stderr)
	})

	t.Run("BadExecutionID", func(t *testing.T) {
		r := b.ctl(t, "workflow", "history", "not-a-uuid")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "(invalid_argument, HTTP 400)")
	})

	t.Run("UnreachableServerIsExitOne", func(t *testing.T) {
		dead := httptest.NewServer(nil)
		dead.Close()
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"harvestctl", "--addr", dead.URL, "workflow", "list"}, &out, &errOut)
		require.Equal(t, 1, code)
		require.Contains(t, errOut.String(), "error: ")
	})

	t.Run("UsageErrorsAreExitTwo", func(t *testing.T) {
		for _, args := range [][]string{
			{"workflow", "describe"},
			{"workflow", "describe", "a", "b"},
			{"workflow", "start", "order", "--input-json", "{nope"},
			{"workflow", "start", "order", "--bogus"},
			{"workflow", "signal-with-start", "order", "--signal", "approved"},
			{"workflow", "result", "x", "--wait", "soon"},
			{"--output", "yaml", "workflow", "list"},
			{"workflow", "nope"},
		} {
			r := b.ctl(t, args...)
			require.Equal(t, 2, r.code, "%v: stderr %s", args, r.stderr)
			require.True(t, strings.HasPrefix(r.stderr, "error: "), "%v: stderr %q", args, r.stderr)
			require.Empty(t, r.stdout, "%v", args)
		}
	})
}
