package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	stdnet "net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/internal/tlsconf/tlstest"
)

// Environment of the chaos test.
const (
	envEnable   = "HARVEST_E2E"          // 1: run TestChaos
	envProfile  = "HARVEST_E2E_PROFILE"  // short (default) or long
	envDuration = "HARVEST_E2E_DURATION" // load duration of the long profile (default 30m)
	envNodes    = "HARVEST_E2E_NODES"    // nodes (default 3)
	envWorkers  = "HARVEST_E2E_WORKERS"  // client goroutines (default 8 short, 16 long)
	envSeed     = "HARVEST_E2E_SEED"     // nemesis seed (default: random, printed)
	envKeep     = "HARVEST_E2E_KEEP"     // 1: keep the work directory (logs, history) even on success
	envBroken   = "HARVEST_E2E_BROKEN"   // 1: build harvestd with -tags harvest_broken_claim and expect violations
	envHarvestd = "HARVEST_E2E_HARVESTD" // a prebuilt harvestd (scripts/chaos.sh builds it)
	envNFT      = "HARVEST_E2E_NFT"      // none: use the fallbacks without nftables (blackhole routes, link down)
	envTLS      = "HARVEST_E2E_TLS"      // 1: the API and every hop over (mutual) TLS

	// Set by the outer test for its re-execution inside the sandbox.
	envInside = "HARVEST_E2E_INSIDE"
	envBin    = "HARVEST_E2E_BIN"
	envDir    = "HARVEST_E2E_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envInside) == "1" {
		os.Exit(m.Run()) // the sandbox needs no test database
	}
	pgtest.Main(m)
}

// TestChaos runs the fault-injection suite (see the package doc). Outside
// the sandbox it builds harvestd and re-executes this test inside a private
// net+mount+pid namespace; inside, it runs the suite.
func TestChaos(t *testing.T) {
	if os.Getenv(envInside) == "1" {
		runInside(t)
		return
	}
	if os.Getenv(envEnable) != "1" {
		t.Skipf("fault-injection suite: set %s=1 to run it (root and network namespaces needed; scripts/chaos.sh runs the long profile)", envEnable)
	}
	if why := NetnsAvailable(); why != "" {
		t.Skipf("fault-injection suite cannot run here: %s", why)
	}
	dir, err := os.MkdirTemp("", "harvest-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// postgres (another OS user) keeps its data under dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv(envHarvestd)
	if bin == "" {
		bin = filepath.Join(dir, "harvestd")
		args := []string{"build", "-o", bin}
		if os.Getenv(envBroken) == "1" {
			args = append(args, "-tags", "harvest_broken_claim")
		}
		build := exec.Command("go", append(args, "../cmd/harvestd")...)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build harvestd (before entering the sandbox, which has no network): %v\n%s", err, out)
		}
	}
	timeout := "20m"
	if dl, ok := t.Deadline(); ok {
		timeout = time.Until(dl).Round(time.Second).String()
	}
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc",
		os.Args[0], "-test.run", "^TestChaos$", "-test.v", "-test.count", "1", "-test.timeout", timeout)
	cmd.Env = append(os.Environ(), envInside+"=1", envBin+"="+bin, envDir+"="+dir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	keep := os.Getenv(envKeep) == "1" || err != nil
	if keep {
		t.Logf("work directory kept: %s (node logs n*.log, history.jsonl, report.txt, pg/pg.log)", dir)
	} else {
		_ = os.RemoveAll(dir)
	}
	if err != nil {
		t.Fatalf("fault-injection suite failed (sandboxed run: %v); its output is above", err)
	}
}

// profile is the shape of a run.
type profile struct {
	name    string
	load    time.Duration // for long: total load time; short runs the schedule once
	hold    time.Duration
	settle  time.Duration
	workers int
}

func readProfile(t *testing.T) profile {
	p := profile{name: "short", hold: 10 * time.Second, settle: 3 * time.Second, workers: 8}
	if os.Getenv(envProfile) == "long" {
		p = profile{name: "long", load: 30 * time.Minute, hold: 8 * time.Second, settle: 5 * time.Second, workers: 16}
		if d := os.Getenv(envDuration); d != "" {
			v, err := time.ParseDuration(d)
			if err != nil {
				t.Fatalf("%s=%q: %v", envDuration, d, err)
			}
			p.load = v
		}
	}
	if w := os.Getenv(envWorkers); w != "" {
		v, err := strconv.Atoi(w)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive number", envWorkers, w)
		}
		p.workers = v
	}
	return p
}

func runInside(t *testing.T) {
	began := time.Now()
	bin, dir := os.Getenv(envBin), os.Getenv(envDir)
	if bin == "" || dir == "" {
		t.Fatalf("%s and %s must be set by the outer test", envBin, envDir)
	}
	prof := readProfile(t)
	nodes := 3
	if v := os.Getenv(envNodes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 || n > 9 {
			t.Fatalf("%s=%q: want 3..9", envNodes, v)
		}
		nodes = n
	}
	seed := rand.Uint64()
	if v := os.Getenv(envSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, v, err)
		}
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	logf := func(format string, args ...any) {
		t.Logf("%s "+format, append([]any{time.Since(began).Round(100 * time.Millisecond)}, args...)...)
	}

	// A private /run/netns for `ip netns` in this mount namespace.
	if err := os.MkdirAll("/run/netns", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", "/run/netns", "tmpfs", 0, ""); err != nil {
		t.Fatalf("mount tmpfs on /run/netns: %v", err)
	}

	net := &Net{ID: "hv", Prefix: "10.77.0", N: nodes, Logf: logf, NoNFT: os.Getenv(envNFT) == "none"}
	if err := net.Up(); err != nil {
		t.Fatalf("network: %v", err)
	}
	t.Cleanup(net.Down)
	pg := &Postgres{Dir: filepath.Join(dir, "pg"), Host: net.Addr(0), Port: 5432, Logf: logf}
	if err := pg.Start(); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() { _ = pg.Stop(false) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dsns := map[uint16]string{}
	newShard := func(ctx context.Context, id uint16) (string, error) {
		db := fmt.Sprintf("harvest_s%d", id)
		if err := pg.CreateDB(ctx, db); err != nil {
			return "", err
		}
		dsns[id] = pg.DSN(db)
		return dsns[id], nil
	}
	seedShards := map[uint16]string{}
	for id := range uint16(2) {
		dsn, err := newShard(ctx, id)
		if err != nil {
			t.Fatalf("create shard database: %v", err)
		}
		seedShards[id] = dsn
	}

	secrets, err := NewSecrets(dir)
	if err != nil {
		t.Fatalf("cluster key and admin token: %v", err)
	}
	cl := &Cluster{Net: net, Binary: bin, Dir: dir, Shards: seedShards, Raft: raftSupported(bin), Secrets: secrets, Logf: logf}
	var notes []string
	if os.Getenv(envTLS) == "1" {
		cl.TLS = clusterTLS(t, net)
		notes = append(notes, "TLS on: the API, forwarding, node requests and raft over mutual TLS (one CA)")
	}
	if !cl.Raft {
		notes = append(notes, "harvestd agent has no raft flags: static shards, raft leader and drain faults are skipped")
	}
	if !net.nft {
		notes = append(notes, "nft not installed: partitions use blackhole routes (immediate errors, not silent drops), isolation uses link down")
	}
	t.Cleanup(cl.StopAll)
	for i := 1; i <= nodes; i++ {
		if err := cl.Start(i); err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
	}
	if err := cl.WaitReady(ctx, 120*time.Second); err != nil {
		t.Fatalf("%v (logs in %s)", err, dir)
	}
	logf("cluster ready: %d nodes, raft catalog %v, TLS %v, postgres %s:%d, seed %d, profile %s",
		nodes, cl.Raft, cl.TLS != nil, pg.Host, pg.Port, seed, prof.name)

	hf, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	hist := NewHistory(hf)
	client := NewClient(Nodes(cl), secrets.Token, hist).WithTLS(cl.TLS.clientConfig())
	wl := &Workload{Client: client, Workers: prof.workers, OpTimeout: 30 * time.Second, DupRate: 0.3, CancelShare: 0.08, CounterShare: 0.12,
		ParentShare: 0.04, ApproverShare: 0.03, CartShare: 0.06, BatchShare: 0.02, ResetShare: 0.04, ReportShare: 0.14, Schedules: 4, ScheduleEvery: 25 * time.Second, ScheduleLife: 45 * time.Second,
		DebounceKeys: 3, BatchKeys: 3, ThrottleKeys: 1}
	if cl.Raft {
		// Receivers live in the raft catalog.
		wl.WebhookEvery = 200 * time.Millisecond
	}
	nem := &Nemesis{Cluster: cl, PG: pg, Client: client, Logf: logf, Hold: prof.hold, Settle: prof.settle,
		AddShard: 2, NewShard: newShard}

	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	loadStart := time.Now()
	go func() { wl.Run(loadCtx); close(loadDone) }()
	sleepCtx(ctx, 10*time.Second) // warm-up under load

	schedule := append([]string(nil), AllFaults...)
	rng.Shuffle(len(schedule), func(i, j int) { schedule[i], schedule[j] = schedule[j], schedule[i] })
	for _, f := range schedule {
		nem.Inject(ctx, f)
	}
	if prof.name == "long" {
		for time.Since(loadStart) < prof.load {
			nem.Inject(ctx, AllFaults[rng.IntN(len(AllFaults))])
		}
	}
	sleepCtx(ctx, 3*time.Second)
	stopLoad()
	<-loadDone
	loadDur := time.Since(loadStart)
	logf("load stopped after %s, %d ops recorded", loadDur.Round(time.Second), len(hist.Ops()))

	// Heal everything, re-deliver what was never answered, let it finish.
	healAt := time.Now()
	logf("heal everything at %s UTC", clock(healAt))
	nem.healEverything()
	if err := cl.WaitReady(ctx, 120*time.Second); err != nil {
		t.Errorf("after the final heal: %v", err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Minute)
	redone, left := wl.Redeliver(rctx, 2*time.Minute)
	rcancel()
	logf("re-delivered %d parked chains (%d still unanswered or refused)", redone, left)
	// Every deferred item fires within its policy's wait of the heal (a
	// throttle key's backlog at its rate): wait until none is pending.
	pending, took := WaitDeferred(ctx, client, 2*time.Minute)
	logf("deferred items pending or firing: %d, %s after the re-delivery", pending, took.Round(100*time.Millisecond))
	waited := time.Now()
	bugs := wl.Bugs()
	for _, b := range bugs {
		notes = append(notes, "WORKLOAD BUG (not sent): "+b)
	}
	st, _, err := WaitQuiet(ctx, dsns, 3*time.Minute)
	if err == nil {
		// The outbox drains after the last run closed (a child's report,
		// an answered signal's row): give it a bounded while.
		st, err = WaitOutbox(ctx, dsns, st, time.Minute)
	}
	if err != nil {
		t.Fatalf("read the shard databases: %v", err)
	}
	if n, last := st.DeferredOpenedAfter(waited); n > 0 {
		logf("deferred items opened after that wait: %d, the last at %s UTC", n, clock(last))
	}
	ops := hist.Ops()
	vs := Check(ops, st)
	notes = append(notes, CancelStats(ops, st), ChainStats(ops, st), FamilyStats(ops, st), ScheduleStats(ops, st), DeferredStats(ops, st), WebhookStats(ops, st), FlowStats(st), BatchStats(ops, st), ResetStats(ops, st))

	rep := &Report{Profile: prof.name, Seed: seed, Nodes: nodes, Duration: loadDur, Total: time.Since(began), Ops: ops,
		Faults: nem.Faults, Violations: vs, Executions: st.Executions(), Redelivered: redone, StillParked: left,
		Quiesce: time.Since(healAt), Notes: notes}
	var full strings.Builder
	rep.Print(&full, -1)
	_ = os.WriteFile(filepath.Join(dir, "report.txt"), []byte(full.String()), 0o644)
	rep.Print(os.Stdout, 40)

	// The checker must be able to fail: plant one violation of each kind
	// it can see in the databases and check that it reports them.
	if os.Getenv(envBroken) != "1" {
		if err := selfTestChecker(ctx, ops, dsns); err != nil {
			t.Errorf("checker self-test: %v", err)
		}
	}

	missing := 0
	for _, f := range AllFaults {
		found := false
		for _, g := range nem.Faults {
			found = found || g.Type == f && g.Skipped == "" && g.Err == ""
		}
		if !found {
			missing++
		}
	}
	switch {
	case os.Getenv(envBroken) == "1":
		if len(vs) == 0 {
			t.Errorf("broken build (%s=1): the checker found no violation", envBroken)
		} else {
			logf("broken build: the checker found %d violations, as it must", len(vs))
		}
	case len(vs) > 0:
		t.Errorf("%d violations (see the report above; work directory %s)", len(vs), dir)
	}
	if len(bugs) > 0 {
		t.Errorf("the workload has %d bugs of its own (see the report's notes)", len(bugs))
	}
	if missing > 0 {
		t.Errorf("%d fault types were not injected cleanly (see the fault table)", missing)
	}
}

// clusterTLS makes a CA and one certificate every node serves and dials
// with, naming each host's address.
func clusterTLS(t *testing.T, n *Net) *TLS {
	ca := tlstest.NewCA(t, "chaos")
	var ips []stdnet.IP
	for i := 1; i <= n.N; i++ {
		ips = append(ips, stdnet.ParseIP(n.Addr(i)))
	}
	tl, err := NewTLS(ca.NodeFor(t, "node", time.Now().Add(47*time.Hour), ips...))
	if err != nil {
		t.Fatalf("TLS: %v", err)
	}
	return tl
}

// raftSupported reports whether the harvestd binary has the raft flags.
func raftSupported(bin string) bool {
	out, _ := exec.Command(bin, "agent", "--help").CombinedOutput()
	return strings.Contains(string(out), "--bootstrap-expect")
}
