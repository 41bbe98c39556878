package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBenchModes runs every mode briefly, in both output formats, and
// requires every operation to succeed.
func TestBenchModes(t *testing.T) {
	b := setup(t)
	for _, mode := range []string{benchStart, benchDedup, benchSignal, benchE2E, benchBatch} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"bench", "--mode", mode, "--count", "40", "--concurrency", "4", "--quiet"}
			switch mode {
			case benchDedup:
				args = append(args, "--keys", "8")
			case benchSignal:
				args = append(args, "--runs", "5")
			case benchBatch:
				args = append(args, "--batch-size", "3")
			}
			m := b.okJSON(t, args...)
			require.Equal(t, mode, m["mode"])
			require.EqualValues(t, 40, m["ops"])
			require.EqualValues(t, 40, m["ok"])
			require.EqualValues(t, 0, m["errors"])
			require.Empty(t, m["errors_by_kind"])
			require.EqualValues(t, 4, m["concurrency"])
			require.Equal(t, []any{b.url}, m["nodes"])
			require.Greater(t, m["throughput_ops_per_s"], 0.0)
			require.Greater(t, m["elapsed_s"], 0.0)
			lat := m["latency_ms"].(map[string]any)
			for _, k := range []string{"mean", "p50", "p90", "p99", "max"} {
				require.Contains(t, lat, k)
			}
			require.LessOrEqual(t, lat["p50"], lat["p90"])
			require.LessOrEqual(t, lat["p90"], lat["p99"])
			require.LessOrEqual(t, lat["p99"], lat["max"])
			require.Greater(t, lat["max"], 0.0)
			switch mode {
			case benchDedup:
				require.EqualValues(t, 40, m["deduplicated"], "every replay answered 200 deduplicated")
				require.EqualValues(t, 8, m["keys"])
			case benchSignal:
				require.Equal(t, "order", m["workflow"])
				require.Equal(t, "noise", m["signal"])
				require.EqualValues(t, 5, m["runs"])
			case benchE2E:
				require.EqualValues(t, 40, m["completed"])
				require.Equal(t, "onboarding", m["workflow"])
			case benchBatch:
				require.EqualValues(t, 3, m["batch_size"])
				require.InDelta(t, 3*m["throughput_ops_per_s"].(float64), m["items_per_s"], 1e-6)
				var runs int
				require.NoError(t, b.pool.QueryRow(context.Background(),
					`SELECT count(*) FROM harvest_executions WHERE idempotency_key LIKE 'bench-batch-%'`).Scan(&runs))
				require.Equal(t, 40*3, runs, "one run per item")
			}

			table := b.ok(t, append(args, "--count", "12")...)
			require.Equal(t, mode, cell(t, table, "mode"))
			require.Equal(t, "12", cell(t, table, "ops"))
			require.Equal(t, "0", cell(t, table, "errors"))
			require.Contains(t, cell(t, table, "throughput"), "ops/s")
			require.Contains(t, cell(t, table, "latency p99"), "ms")
		})
	}
}

// TestBenchNodesAndProgress spreads the load over two --addr (the same node
// twice) and draws the progress line to stderr, once a second off a
// terminal.
func TestBenchNodesAndProgress(t *testing.T) {
	b := setup(t)
	r := b.ctl(t, "bench", "--addr", b.url, "--addr", b.url+","+b.url, "--duration", "1500ms", "--concurrency", "2",
		"--output", "json")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, `"nodes": [`)
	require.Equal(t, 3, strings.Count(r.stdout, `"`+b.url+`"`))
	require.Contains(t, r.stderr, "bench start")
	require.Contains(t, r.stderr, "ops/s")
	require.NotContains(t, r.stderr, "\r")
	require.Regexp(t, `"elapsed_s": 1\.[5-9]`, r.stdout)
}

// TestBenchE2EWithActivities runs workflows of three no-op activities to
// completion: each run's history holds exactly three completions.
func TestBenchE2EWithActivities(t *testing.T) {
	b := setup(t)
	// --quiet: a run longer than a second (a loaded machine) would draw
	// the progress line on stderr, which okJSON wants empty.
	m := b.okJSON(t, "bench", "--mode", "e2e", "--activities", "3", "--count", "10", "--concurrency", "4", "--quiet")
	require.Equal(t, "noop_chain", m["workflow"])
	require.EqualValues(t, 10, m["completed"])
	require.EqualValues(t, 0, m["errors"])
	var completions, runs int
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT count(*), count(DISTINCT execution_id) FROM harvest_events WHERE event_type = 'ActivityCompleted'
		   AND execution_id IN (SELECT execution_id FROM harvest_executions WHERE workflow_name = 'noop_chain')`).
		Scan(&completions, &runs))
	require.Equal(t, 10, runs)
	require.Equal(t, 30, completions)
}

// TestBenchCountsWrongAnswers counts failed operations (starts of a
// workflow the server does not know), prints them and exits 1.
func TestBenchCountsWrongAnswers(t *testing.T) {
	b := setup(t)
	r := b.ctl(t, "bench", "--workflow", "no-such-workflow", "--count", "6", "--concurrency", "2", "--quiet")
	require.Equal(t, exitFailure, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Equal(t, "6", cell(t, r.stdout, "errors"))
	require.Equal(t, "0", cell(t, r.stdout, "ok"))
	require.Contains(t, r.stderr, "6 of 6 operations failed")
}

func TestBenchUsageErrors(t *testing.T) {
	b := setup(t)
	for _, args := range [][]string{
		{"bench", "--mode", "nope"},
		{"bench", "--duration", "1s", "--count", "5"},
		{"bench", "--count", "0"},
		{"bench", "--concurrency", "0", "--count", "5"},
		{"bench", "--input-json", "{", "--count", "5"},
		{"bench", "--output", "yaml", "--count", "5"},
		{"bench", "extra", "--count", "5"},
		{"bench", "--activities", "3", "--workflow", "order", "--count", "5"},
		{"bench", "--activities", "1001", "--count", "5"},
	} {
		start := time.Now()
		r := b.ctl(t, args...)
		require.Equal(t, exitUsage, r.code, "%v: stderr %s", args, r.stderr)
		require.Empty(t, r.stdout, "%v", args)
		require.Less(t, time.Since(start), 5*time.Second, "%v sent no load", args)
	}
}

func TestLatencies(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	l := latencies(lat)
	require.Equal(t, benchLatency{Mean: 50.5, P50: 50, P90: 90, P99: 99, Max: 100}, l)
	require.Equal(t, benchLatency{}, latencies(nil))
	require.Equal(t, "2", strconv.Itoa(int(latencies([]time.Duration{2 * time.Millisecond}).P99)))
}
