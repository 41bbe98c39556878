package engine_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgpool"
	"github.com/harvestd/harvest/internal/pgtest"
)

// update rewrites the golden file from a run of the current code.
var update = flag.Bool("update", false, "rewrite testdata/statements.golden")

const goldenFile = "testdata/statements.golden"

const goldenHeader = `# The SQL statements and round trips of engine operations, pinned by
# TestStatementCounts (statements_test.go); rewrite with
#   go test ./engine/ -run TestStatementCounts -update
# and review the diff. A section is one operation, a "--" block one of its
# transactions (or a statement sent outside one), "rt" the first statement of
# each round trip. Each line: the command tag (rows returned or changed), then
# the statement, whitespace collapsed, cut at 100 characters with a hash of its
# whole text. Units may finish in another order than shown.
`

// TestStatementCounts pins the statements and database round trips of
// the engine's hot operations, so that moving their SQL into packages of
// its own (the engine's layering plan, ENGINE-LAYERS.md 3.4 and 3.5) can
// show that it changed neither. It uses only the engine's exported API:
// it must pass unchanged across the move.
//
// Every operation runs in a window of the recorder on the engine's pool
// (statements_trace_test.go), which ends on an observable condition: the
// operation's last effect. The background's empty polls are left out.
// Where the engine legitimately takes another path on a busy machine, the
// other path is pinned too and accepted in its place (see forms).
func TestStatementCounts(t *testing.T) {
	want := readGolden(t)
	got := map[string][]*unit{}
	for _, g := range scenarioGroups {
		t.Run(g.name, func(t *testing.T) {
			h := setup(t)
			if g.prepare != nil {
				g.prepare(t, h)
			}
			for _, sc := range g.scenarios {
				got[sc.name] = h.window(t, sc.run)
			}
			for _, sc := range g.scenarios {
				t.Run(sc.name, func(t *testing.T) {
					if *update {
						requireUsualForm(t, sc, got)
						return
					}
					checkScenario(t, sc, want, got[sc.name])
				})
			}
		})
	}
	if t.Failed() {
		return
	}
	if *update {
		for _, name := range scenarioNames() {
			if _, ok := got[name]; !ok {
				t.Fatalf("-update did not record %s: do not narrow -run below TestStatementCounts", name)
			}
		}
		writeGolden(t, got)
		return
	}
	for name := range want {
		assert.Contains(t, scenarioNames(), name, "%s has a section no scenario records: run -update", goldenFile)
	}
}

// scenario is one pinned operation.
type scenario struct {
	name string
	// run performs the operation and waits for its last effect.
	run func(t *testing.T, h *harness)
	// loopForm is the scenario whose form this one takes when its start
	// batch runs out of its budget for first tasks (250 ms) before the
	// run's: the same start with the task left to the workflow loop, as a
	// delayed start always leaves it.
	loopForm string
	// retriedAs is the two-trip scenario that a one-trip start batch which
	// misses its time check is sent again as (internal/intake/one_trip.go).
	retriedAs string
}

// scenarioGroup is scenarios run in order on one engine of their own.
type scenarioGroup struct {
	name      string
	prepare   func(t *testing.T, h *harness)
	scenarios []scenario
}

var scenarioGroups = []scenarioGroup{
	{name: "Starts", scenarios: []scenario{
		// A keyed start as StartWorkflow serves it: the replay probe (no
		// claim), the gate read (the gate cache is invalidated first: it is
		// otherwise re-read at most once a second, whenever the second
		// ends), and the start batch in one round trip: BEGIN, the fence,
		// the claim, the run and its events as the first workflow task left
		// them (the task runs in the batch, at the estimated database time,
		// checked before the COMMIT).
		//
		// A busy machine changes the path two ways, both pinned and
		// accepted (see forms). The estimate of the database's clock is the
		// fastest of its samples, each late by its own round trip; a young
		// engine has few, and a slow one can put the batch's stamp after
		// its transaction's now(): the batch misses its time check, rolls
		// back, and is sent again in two trips (KeyedStartTwoTrips; about
		// 1 start in 20 beside 5 CPU hogs). And the batch may run out of its
		// 250 ms for the first task, which is then left to the workflow
		// loop (KeyedStartFirstTaskInWorkflowLoop). A stale early first
		// task is run again in the batch, with the same statements.
		{name: "KeyedStart", run: keyedStart("start-1", false),
			loopForm: "KeyedStartFirstTaskInWorkflowLoop", retriedAs: "KeyedStartTwoTrips"},
		// A keyed start with Delay 0: the batch inserts the run due, and the
		// workflow loop runs its first task (a workflow task on a run not
		// in the state cache: its history is read whole).
		{name: "KeyedStartFirstTaskInWorkflowLoop", run: keyedStart("start-2", true),
			retriedAs: "KeyedStartTwoTripsFirstTaskInWorkflowLoop"},
		// The keyed start repeated: answered from the claim cache, no round
		// trip (a RUNNING run is cached for PollInterval, an hour here).
		{name: "DedupHitFromCache", run: dedupHit(false)},
		// The keyed start repeated with Probed (the API's path for a key the
		// node has not seen): no probe and no cache, so the start batch
		// answers it. It tries one trip, which misses on the taken key, and
		// sends it again in two: the claim (none made) and the claim's run.
		// The miss pauses the one-trip path for the next 32 batches.
		{name: "DedupHitFromStartBatch", run: dedupHit(true)},
		// A keyed start while the one-trip path is paused: the start batch
		// in two round trips (claim and slot holders, then the writes with
		// the COMMIT). The first task runs in the batch, or is left to the
		// workflow loop when the batch runs out of budget.
		{name: "KeyedStartTwoTrips", run: keyedStart("start-3", false),
			loopForm: "KeyedStartTwoTripsFirstTaskInWorkflowLoop"},
		// A keyed start with Delay 0 while the one-trip path is paused.
		{name: "KeyedStartTwoTripsFirstTaskInWorkflowLoop", run: keyedStart("start-4", true)},
	}},
	{name: "SignalAndActivity", prepare: prepareSignalledRun, scenarios: []scenario{
		// A keyed signal through the signal batch (fence, run lock and key
		// lookup; ledger row, event and run update with the COMMIT), and
		// the workflow task it wakes, on the cached run: claim, the events
		// since the cached position, then the activity task, inserted
		// claimed (direct dispatch), with the COMMIT. The engine wakes the
		// workflow loop before Signal returns, so the two cannot be told
		// apart by time: they are pinned together.
		{name: "KeyedSignalAndTheTaskItWakes", run: keyedSignal},
		// The activity's completion through the completion batch, which
		// runs the workflow task it makes due in the same transaction: the
		// run and task locked, the events since the cached position, then
		// the task's delete, the events, the run's close with the COMMIT.
		{name: "ActivityCompletion", run: activityCompletion},
	}},
}

func scenarioNames() []string {
	var out []string
	for _, g := range scenarioGroups {
		for _, sc := range g.scenarios {
			out = append(out, sc.name)
		}
	}
	return out
}

func scenarioNamed(name string) scenario {
	for _, g := range scenarioGroups {
		for _, sc := range g.scenarios {
			if sc.name == name {
				return sc
			}
		}
	}
	panic("no scenario " + name)
}

// checkScenario compares what sc sent with the golden file.
func checkScenario(t *testing.T, sc scenario, want golden, got []*unit) {
	if _, ok := want[sc.name]; !ok {
		t.Fatalf("%s has no section %s: run go test ./engine/ -run TestStatementCounts -update", goldenFile, sc.name)
	}
	for i, f := range forms(sc, want) {
		if sameUnits(f.units, got) {
			if i > 0 {
				t.Logf("%s took another pinned path: %s", sc.name, f.name)
			}
			return
		}
	}
	t.Errorf("%s sent other statements than %s pins, and took none of its other pinned paths (-%s, +sent):\n%s",
		sc.name, goldenFile, goldenFile, lineDiff(render(sc.name, want[sc.name]), render(sc.name, got)))
}

// form is a way a scenario may legitimately go: the units it then sends.
type form struct {
	name  string
	units []*unit
}

// forms are the ways sc may legitimately go, from the golden file: its own
// section, its loop form's, and each of those with its one-trip batch
// missing the time check and sent again as a form of its two-trip sibling.
func forms(sc scenario, g golden) []form {
	xs := withLoopForm(sc, g)
	out := slices.Clone(xs)
	if sc.retriedAs == "" {
		return out
	}
	for _, x := range xs {
		for _, y := range withLoopForm(scenarioNamed(sc.retriedAs), g) {
			if units, ok := missedAndRetried(x.units, y.units); ok {
				out = append(out, form{name: x.name + ", its one-trip batch missing the time check, sent again as " + y.name, units: units})
			}
		}
	}
	return out
}

func withLoopForm(sc scenario, g golden) []form {
	out := []form{{name: sc.name, units: g[sc.name]}}
	if w, ok := g[sc.loopForm]; ok {
		out = append(out, form{name: sc.loopForm, units: w})
	}
	return out
}

// missedAndRetried is form x of a start whose one-trip batch missed its
// time check, sent again as form y of its two-trip sibling: the units
// both have (probe, gate read, a first task the workflow loop ran), x's
// one-trip transaction failing at the check, and what y has that x has
// not (the two-trip transaction, and the workflow loop's first task when
// the retry left it to the loop). x's other units did not happen.
func missedAndRetried(x, y []*unit) ([]*unit, bool) {
	common, onlyX, onlyY := splitUnits(x, y)
	i := slices.IndexFunc(onlyX, oneTrip)
	if i < 0 {
		return nil, false
	}
	return slices.Concat(common, []*unit{missedTimeCheck(onlyX[i])}, onlyY), true
}

// splitUnits splits a and b into the units both have and those only one
// has.
func splitUnits(a, b []*unit) (common, onlyA, onlyB []*unit) {
	left := map[string]int{}
	for _, u := range b {
		left[u.render()]++
	}
	for _, u := range a {
		if r := u.render(); left[r] > 0 {
			left[r]--
			common = append(common, u)
			continue
		}
		onlyA = append(onlyA, u)
	}
	for _, u := range b {
		if r := u.render(); left[r] > 0 {
			left[r]--
			onlyB = append(onlyB, u)
		}
	}
	return common, onlyA, onlyB
}

// oneTrip says u is a transaction sent whole in one round trip.
func oneTrip(u *unit) bool { return u.tx && len(u.rts) == 1 && u.rts[0].ends() }

// missedTimeCheck is one-trip transaction u when its time check, the
// statement before its COMMIT (internal/intake/one_trip.go), raises HR001: the COMMIT
// does not run, and the engine rolls the transaction back.
func missedTimeCheck(u *unit) *unit {
	ss := slices.Clone(u.rts[0].stmts)
	n := len(ss)
	ss[n-2].out, ss[n-1].out = "ERROR HR001", notRun
	rollback := newStmt("ROLLBACK")
	rollback.out = "ROLLBACK"
	return &unit{tx: true, rts: []*roundTrip{{stmts: ss}, {stmts: []stmt{rollback}}}}
}

// requireUsualForm refuses to pin a path a busy machine took instead of
// the usual one.
func requireUsualForm(t *testing.T, sc scenario, got map[string][]*unit) {
	if sc.loopForm != "" && sameUnits(got[sc.name], got[sc.loopForm]) {
		t.Fatalf("%s: the start batch left the first task to the workflow loop (a busy machine): run -update again", sc.name)
	}
	if sc.retriedAs != "" && slices.ContainsFunc(got[sc.name], (*unit).rolledBack) {
		t.Fatalf("%s: the one-trip start batch missed its time check (a busy machine): run -update again", sc.name)
	}
}

func readGolden(t *testing.T) golden {
	t.Helper()
	if *update {
		return nil
	}
	b, err := os.ReadFile(goldenFile)
	require.NoError(t, err, "run go test ./engine/ -run TestStatementCounts -update")
	g, err := parseGolden(string(b))
	require.NoError(t, err, goldenFile)
	return g
}

func writeGolden(t *testing.T, got map[string][]*unit) {
	t.Helper()
	var b strings.Builder
	b.WriteString(goldenHeader)
	for _, name := range scenarioNames() {
		b.WriteString("\n" + render(name, got[name]))
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(goldenFile), 0o755))
	require.NoError(t, os.WriteFile(goldenFile, []byte(b.String()), 0o644))
}

// harness is one engine on a database of its own, its pool traced.
type harness struct {
	e   *engine.Engine
	rec *recorder
	// runs are the runs started, by idempotency key.
	runs map[string]uuid.UUID
	// signalled is the run SignalAndActivity signals.
	signalled uuid.UUID
	// started receives the input of an echo attempt as it begins;
	// release lets the attempts return.
	started chan string
	release chan struct{}
}

// pinnedWorkflow records a marker in its first task (so that the task is
// seen to have run: two events), waits for a "go" signal and returns what
// the echo activity makes of its payload.
const pinnedWorkflow = "pinned"

// firstTaskEvents is the event count of a pinned run after its first
// task: WorkflowStarted and the marker.
const firstTaskEvents = 2

var goSignal = harvest.NewSignal[string]("go")

func setup(t *testing.T) *harness {
	t.Helper()
	h := &harness{rec: newRecorder(), runs: map[string]uuid.UUID{}, started: make(chan string, 1), release: make(chan struct{})}
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	require.NoError(t, err)
	pgpool.Configure(cfg) // as the node's pools
	cfg.ConnConfig.Tracer = h.rec
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	h.e, err = engine.New(pool, h.registry(t), quietConfig())
	require.NoError(t, err)
	require.NoError(t, h.e.Start(context.Background()))
	t.Cleanup(h.e.Stop)
	return h
}

// quietConfig keeps the loops from running on their own during the test:
// no poll tick, lease renewal or sweep for an hour, so that they run only
// when an operation nudges them. One workflow worker: the workflow tasks
// run one after the other, each run back in the state cache before the
// next task takes it.
func quietConfig() engine.Config {
	return engine.Config{
		ShardID: 7, NodeID: "statements", Logger: zerolog.Nop(), WorkflowWorkers: 1,
		PollInterval: time.Hour, LeaseTTL: time.Hour, SweepInterval: time.Hour,
	}
}

func (h *harness) registry(t *testing.T) *harvest.Registry {
	echo := harvest.NewActivity("echo", func(ctx *harvest.ActivityContext, in string) (string, error) {
		select {
		case h.started <- in:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		select {
		case <-h.release:
			return in, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	pinned := harvest.NewWorkflow(pinnedWorkflow, func(ctx harvest.Context, _ string) (string, error) {
		if _, err := harvest.SideEffect(ctx, func() bool { return true }); err != nil {
			return "", err
		}
		v, err := goSignal.Receive(ctx)
		if err != nil {
			return "", err
		}
		return echo.Execute(ctx, v).Get(ctx)
	})
	reg := harvest.NewRegistry()
	require.NoError(t, reg.Register(echo, pinned))
	return reg
}

// window runs op and returns the units the engine finished meanwhile,
// less the background's. op ends by waiting for its last effect; the
// window then waits for that effect's round trip to return.
func (h *harness) window(t *testing.T, op func(t *testing.T, h *harness)) []*unit {
	t.Helper()
	waitUntil(t, "the engine's round trips to return", h.rec.quiet)
	mark := h.rec.mark()
	op(t, h)
	waitUntil(t, "the engine's round trips to return", h.rec.quiet)
	return h.rec.since(mark)
}

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start starts a run of the pinned workflow. It invalidates the gate
// cache first, so that every start that runs the fresh checks reads the
// gates.
func (h *harness) start(t *testing.T, req engine.StartRequest) engine.StartResult {
	t.Helper()
	req.WorkflowName = pinnedWorkflow
	h.e.InvalidateGates()
	res, err := h.e.StartWorkflow(opCtx(t), req)
	require.NoError(t, err)
	return res
}

// keyedStart starts a fresh run with key, with Delay 0 if delayed, and
// waits for its first task to have run, in the batch or in the workflow
// loop.
func keyedStart(key string, delayed bool) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		req := engine.StartRequest{IdempotencyKey: key}
		if delayed {
			req.Delay = new(time.Duration)
		}
		res := h.start(t, req)
		require.True(t, res.StartedFresh, "start %s", key)
		h.runs[key] = res.ExecutionID
		h.waitFirstTask(t, res.ExecutionID)
	}
}

// dedupHit repeats the first keyed start.
func dedupHit(probed bool) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		res := h.start(t, engine.StartRequest{IdempotencyKey: "start-1", Probed: probed})
		require.True(t, res.Deduplicated)
		require.Equal(t, h.runs["start-1"], res.ExecutionID)
	}
}

// prepareSignalledRun starts the run SignalAndActivity signals, delayed,
// so that the workflow loop runs its first task and caches its state
// whatever the start batch's budget (a run a task has run on is cached),
// and waits until it is cached.
func prepareSignalledRun(t *testing.T, h *harness) {
	res := h.start(t, engine.StartRequest{IdempotencyKey: "signalled", Delay: new(time.Duration)})
	h.signalled = res.ExecutionID
	h.waitFirstTask(t, h.signalled)
	h.waitCached(t, 1)
}

// keyedSignal signals the run and waits until the task it woke has run
// and committed: its activity has begun, and the run is back in the cache.
func keyedSignal(t *testing.T, h *harness) {
	res, err := h.e.Signal(opCtx(t), engine.SignalRequest{ExecutionID: h.signalled, SignalName: "go",
		Payload: json.RawMessage(`"ping"`), IdempotencyKey: "signal-1"})
	require.NoError(t, err)
	require.True(t, res.Delivered)
	select {
	case in := <-h.started:
		require.Equal(t, "ping", in)
	case <-opCtx(t).Done():
		t.Fatal("the activity the signal's task scheduled did not begin")
	}
	h.waitCached(t, 1)
}

// activityCompletion lets the activity return and waits for the run to
// close.
func activityCompletion(t *testing.T, h *harness) {
	close(h.release)
	o, err := h.e.Result(observe(opCtx(t)), h.signalled, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, engine.StateCompleted, o.State, "last error %q", o.LastError)
}

func (h *harness) waitFirstTask(t *testing.T, id uuid.UUID) {
	t.Helper()
	ctx := observe(opCtx(t))
	waitUntil(t, "the first task of run "+id.String(), func() bool {
		x, err := h.e.GetExecution(ctx, id)
		return err == nil && x.EventCount == firstTaskEvents
	})
}

// waitCached waits until the state cache holds n runs.
func (h *harness) waitCached(t *testing.T, n int) {
	t.Helper()
	waitUntil(t, "the state cache to hold the run", func() bool { return h.e.StateCacheStats().Entries == n })
}

// waitUntil polls cond until it holds, failing after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
