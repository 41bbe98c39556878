package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

// Modes of "bench --mode".
const (
	benchStart  = "start"
	benchDedup  = "dedup"
	benchSignal = "signal"
	benchE2E    = "e2e"
	benchBatch  = "batch"
)

// Defaults of the bench flags.
const (
	benchWorkflowDefault    = "onboarding"
	benchInputDefault       = `{"user_id":1}`
	benchSignalDefault      = "noise"
	benchSignalWorkflow     = "order"
	benchConcurrencyDefault = 32
	benchDurationDefault    = 10 * time.Second
	benchKeysDefault        = 1000
	benchRunsDefault        = 256
	benchBatchSizeDefault   = 100
	// benchResultWait is the long-poll of one e2e result request (the
	// server's cap); benchResultMax bounds the whole wait of one run.
	benchResultWait = 30 * time.Second
	benchResultMax  = 2 * time.Minute
	// benchGCPercent is the load generator's GOGC unless the environment
	// sets one.
	benchGCPercent = 400
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "generate load against one or more nodes and report throughput, latency and errors",
		Description: `Modes:
   start   keyed starts of --workflow, every key fresh; an answer that is not started_fresh is an error
   dedup   first starts --keys keyed runs, then replays those keys; an answer that is not a 200
           deduplicated one naming the original execution is an error
   signal  first starts --runs runs of "order" (they wait for "approved"), then sends keyed signals
           named --signal, every key fresh, round-robin over them; the runs are terminated at the end
   e2e     keyed starts of --workflow that wait for the run to complete (POST …/start?wait=30s),
           polled further (GET …/result?wait=30s) if the wait ends first; the latency is start to
           completion, a run that does not complete is an error; --poll-result starts without
           waiting and always polls; --activities N runs the demo workflow noop_chain with N
           no-op activities instead
   batch   batches of --batch-size keyed starts of --workflow (POST /workflows/batch_start), every
           key fresh; an operation is one batch, and an item that is not a 201 started_fresh fails
           it; items/s is reported beside ops/s

Requests are not retried (a request is sent again only when a kept-alive connection the node closed
fails before any answer), so latencies are honest; requests go round-robin over the --addr nodes.
Latency percentiles and throughput count successful operations only. The progress line goes to
stderr (redrawn on a terminal, once a second otherwise). The exit code is 1 when any operation failed.
The load generator runs its Go collector at GOGC=400 unless GOGC is set.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Value: benchStart, Usage: "start, dedup, signal, e2e or batch"},
			&cli.StringSliceFlag{Name: "addr",
				Usage: "base URL of a node; repeat it or give a comma list to spread the load (default: the global --addr)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "table or json (default: the global --output)"},
			&cli.StringFlag{Name: "workflow", Value: benchWorkflowDefault, Usage: "workflow started in start, dedup and e2e modes"},
			&cli.StringFlag{Name: "input-json", Value: benchInputDefault, Usage: "input of those starts"},
			&cli.IntFlag{Name: "activities", Usage: "start the demo workflow noop_chain with this many no-op activities " +
				"instead of --workflow (e2e: workflows with N activities, start to completion)"},
			&cli.StringFlag{Name: "signal", Value: benchSignalDefault, Usage: "signal name of signal mode"},
			&cli.IntFlag{Name: "keys", Value: benchKeysDefault, Usage: "keyed runs created, then replayed, by dedup mode"},
			&cli.IntFlag{Name: "runs", Value: benchRunsDefault, Usage: `"order" runs signal mode spreads its signals over`},
			&cli.IntFlag{Name: "batch-size", Value: benchBatchSizeDefault, Usage: "starts per batch in batch mode (1-1000)"},
			&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: benchConcurrencyDefault,
				Usage: "concurrent clients"},
			&cli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Value: benchDurationDefault,
				Usage: "how long to issue operations (not with --count)"},
			&cli.IntFlag{Name: "count", Aliases: []string{"n"}, Usage: "total operations, instead of --duration"},
			&cli.BoolFlag{Name: "poll-result", Usage: "e2e: start without waiting, then poll for the result " +
				"(two requests per run)"},
			&cli.BoolFlag{Name: "routing", Usage: "send each keyed operation straight to its shard's owner, " +
				"learnt from the node's GET /cluster/routing (client.WithRouting); a miss is forwarded as usual"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress line"},
		},
		Action: benchAction,
	}
}

// benchConfig is a checked bench command line.
type benchConfig struct {
	mode        string
	addrs       []string
	token       string
	output      string
	workflow    string
	input       json.RawMessage
	signal      string
	keys        int
	runs        int
	batchSize   int
	concurrency int
	tls         *tls.Config   // --ca-cert's roots (nil: the system's)
	duration    time.Duration // 0 with count
	count       int64         // 0 with duration
	quiet       bool
	pollResult  bool
	routing     bool // client.WithRouting
}

func benchAction(c *cli.Context) error {
	if os.Getenv("GOGC") == "" {
		// The load generator allocates per request and keeps little: fewer
		// collections leave more of a shared machine to what it measures.
		debug.SetGCPercent(benchGCPercent)
	}
	if _, err := parseArgs(c); err != nil {
		return err
	}
	cfg, err := benchFlags(c)
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	b := newBench(cfg, stderr)
	sum, err := b.run(c.Context)
	if err != nil {
		return failed(err)
	}
	if err := writeBenchSummary(c.App.Writer, cfg.output, sum); err != nil {
		return failed(err)
	}
	if sum.Errors > 0 {
		return failed(fmt.Errorf("%d of %d operations failed", sum.Errors, sum.Ops))
	}
	if sum.Interrupted {
		return failed(errors.New("interrupted"))
	}
	return nil
}

// parentContext is the context of the global flags, which bench flags of
// the same name shadow.
func parentContext(c *cli.Context) *cli.Context {
	if l := c.Lineage(); len(l) > 1 {
		return l[1]
	}
	return c
}

// benchFlags reads and checks the flags.
func benchFlags(c *cli.Context) (*benchConfig, error) {
	global := parentContext(c)
	cfg := &benchConfig{
		mode: c.String("mode"), token: global.String("token"), workflow: c.String("workflow"),
		signal: c.String("signal"), keys: c.Int("keys"), runs: c.Int("runs"), batchSize: c.Int("batch-size"), concurrency: c.Int("concurrency"),
		quiet: c.Bool("quiet"), pollResult: c.Bool("poll-result"), routing: c.Bool("routing"),
	}
	cfg.tls, _ = c.App.Metadata[tlsMetadata].(*tls.Config)
	switch cfg.mode {
	case benchStart, benchDedup, benchSignal, benchE2E, benchBatch:
	default:
		return nil, usagef("--mode %q: want start, dedup, signal, e2e or batch", cfg.mode)
	}
	addrs := []string{global.String("addr")}
	if c.IsSet("addr") {
		addrs = c.StringSlice("addr")
	}
	for _, a := range addrs {
		for _, s := range strings.Split(a, ",") {
			if s = strings.TrimSpace(s); s != "" {
				cfg.addrs = append(cfg.addrs, s)
			}
		}
	}
	if len(cfg.addrs) == 0 {
		return nil, usagef("--addr: no node address")
	}
	cfg.output = global.String("output")
	if c.IsSet("output") {
		cfg.output = c.String("output")
	}
	if cfg.output != outputTable && cfg.output != outputJSON {
		return nil, usagef("--output %q: want table or json", cfg.output)
	}
	if c.IsSet("duration") && c.IsSet("count") {
		return nil, usagef("--duration and --count: give one of them")
	}
	if c.IsSet("count") {
		if cfg.count = int64(c.Int("count")); cfg.count < 1 {
			return nil, usagef("--count %d: want at least 1", cfg.count)
		}
	} else if cfg.duration = c.Duration("duration"); cfg.duration <= 0 {
		return nil, usagef("--duration %s: want a positive duration", cfg.duration)
	}
	if cfg.concurrency < 1 {
		return nil, usagef("--concurrency %d: want at least 1", cfg.concurrency)
	}
	if cfg.mode == benchDedup && cfg.keys < 1 {
		return nil, usagef("--keys %d: want at least 1", cfg.keys)
	}
	if cfg.mode == benchBatch && (cfg.batchSize < 1 || cfg.batchSize > benchBatchMax) {
		return nil, usagef("--batch-size %d: want 1 to %d", cfg.batchSize, benchBatchMax)
	}
	if cfg.mode == benchSignal && cfg.runs < 1 {
		return nil, usagef("--runs %d: want at least 1", cfg.runs)
	}
	if cfg.workflow == "" {
		return nil, usagef("--workflow: empty")
	}
	if cfg.signal == "" {
		return nil, usagef("--signal: empty")
	}
	cfg.input = json.RawMessage(c.String("input-json"))
	if c.IsSet("activities") {
		n := c.Int("activities")
		switch {
		case c.IsSet("workflow") || c.IsSet("input-json"):
			return nil, usagef("--activities picks the workflow and its input: drop --workflow and --input-json")
		case n < 0 || n > demo.NoopChainMax:
			return nil, usagef("--activities %d: want 0 to %d", n, demo.NoopChainMax)
		}
		cfg.workflow, cfg.input = demo.NoopChainName, json.RawMessage(fmt.Sprintf(`{"activities":%d}`, n))
	}
	if !json.Valid(cfg.input) {
		return nil, usagef("--input-json: not valid JSON: %s", cfg.input)
	}
	return cfg, nil
}

// bench is one load run.
type bench struct {
	cfg     *benchConfig
	stderr  io.Writer
	clients []*client.Client
	// prefix makes this run's idempotency keys unique.
	prefix string
	// Set up by dedup mode (keys and the runs they created) and signal
	// mode (runs).
	keys []string
	runs []string
}

func newBench(cfg *benchConfig, stderr io.Writer) *bench {
	b := &bench{cfg: cfg, stderr: stderr, prefix: "bench-" + cfg.mode + "-" + randomHex(6)}
	for _, a := range cfg.addrs {
		opts := []client.Option{client.WithHTTPClient(benchHTTPClient(a, cfg.concurrency, cfg.tls)),
			client.WithToken(cfg.token), client.WithUserAgent(userAgent + "-bench"), client.WithoutRetries()}
		if cfg.routing {
			opts = append(opts, client.WithRouting(0))
		}
		b.clients = append(b.clients, client.New(a, opts...))
	}
	return b
}

// benchHTTPClient is the HTTP client of one node, over benchTransport:
// https (trusting rootsCfg's roots, the system's when nil) or plain http.
func benchHTTPClient(addr string, concurrency int, rootsCfg *tls.Config) *http.Client {
	var cfg *tls.Config
	if strings.HasPrefix(strings.ToLower(addr), "https://") {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		if rootsCfg != nil {
			cfg = rootsCfg.Clone()
		}
	}
	// The transport's connections are the node's: no redirect may send a
	// request elsewhere over them.
	return &http.Client{Transport: newBenchTransport(concurrency*2, cfg),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func randomHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}

// api is the client of operation n, round-robin over the nodes.
func (b *bench) api(n int64) *client.Client { return b.clients[n%int64(len(b.clients))] }

// benchOp is one measured operation, number n of the run. It returns nil
// on success; a benchError (or a client error) otherwise.
type benchOp func(ctx context.Context, n int64) error

// benchError is an answer that arrived but is wrong for the mode.
type benchError struct {
	kind string
	msg  string
}

func (e benchError) Error() string { return e.kind + ": " + e.msg }

func wrong(status int, what, format string, args ...any) error {
	return benchError{kind: fmt.Sprintf("%d %s", status, what), msg: fmt.Sprintf(format, args...)}
}

// errorKind classifies a failed operation: "<status> <code>" for an
// answer, "transport" for no answer.
func errorKind(err error) string {
	var be benchError
	var apiErr *client.Error
	switch {
	case errors.As(err, &be):
		return be.kind
	case errors.As(err, &apiErr):
		return fmt.Sprintf("%d %s", apiErr.Status, codeOrNone(apiErr.Code))
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "transport"
}

func (b *bench) run(ctx context.Context) (*benchSummary, error) {
	var op benchOp
	switch b.cfg.mode {
	case benchStart:
		op = b.startOp
	case benchDedup:
		if err := b.setupDedup(ctx); err != nil {
			return nil, err
		}
		op = b.dedupOp
	case benchSignal:
		defer b.cleanupSignal() // also the runs of a setup that failed half-way
		if err := b.setupSignal(ctx); err != nil {
			return nil, err
		}
		op = b.signalOp
	case benchE2E:
		op = b.e2eOp
	case benchBatch:
		op = b.batchOp
	}
	return b.drive(ctx, op), nil
}

func (b *bench) note(format string, args ...any) {
	if !b.cfg.quiet {
		fmt.Fprintf(b.stderr, format+"\n", args...)
	}
}

// keyedStart starts a run of the workflow under key, waiting up to wait
// for it to close, and requires a fresh start.
func (b *bench) keyedStart(ctx context.Context, api *client.Client, workflow string, input json.RawMessage, key string,
	wait time.Duration) (*client.StartResponse, error) {
	res, err := api.Start(ctx, workflow, client.StartRequest{Input: input, IdempotencyKey: key, Wait: wait})
	if err != nil {
		return nil, err
	}
	if res.Status != http.StatusCreated || res.StartedFresh == nil || !*res.StartedFresh {
		return nil, wrong(res.Status, "not_started_fresh", "start with fresh key %s: %s", key, res.Raw)
	}
	return res, nil
}

func (b *bench) startOp(ctx context.Context, n int64) error {
	_, err := b.keyedStart(ctx, b.api(n), b.cfg.workflow, b.cfg.input, fmt.Sprintf("%s-%d", b.prefix, n), 0)
	return err
}

// setupDedup creates the keyed runs that dedup mode replays.
func (b *bench) setupDedup(ctx context.Context) error {
	b.note("bench dedup: creating %d keyed runs of %s…", b.cfg.keys, b.cfg.workflow)
	b.keys = make([]string, b.cfg.keys)
	b.runs = make([]string, b.cfg.keys)
	return b.parallel(ctx, b.cfg.keys, func(ctx context.Context, i int) error {
		key := fmt.Sprintf("%s-k%d", b.prefix, i)
		res, err := b.keyedStart(ctx, b.api(int64(i)), b.cfg.workflow, b.cfg.input, key, 0)
		if err != nil {
			return err
		}
		b.keys[i], b.runs[i] = key, res.ExecutionID
		return nil
	})
}

func (b *bench) dedupOp(ctx context.Context, n int64) error {
	i := n % int64(len(b.keys))
	res, err := b.api(n).Start(ctx, b.cfg.workflow, client.StartRequest{Input: b.cfg.input, IdempotencyKey: b.keys[i]})
	switch {
	case err != nil:
		return err
	case res.Status != http.StatusOK || res.Deduplicated == nil || !*res.Deduplicated:
		return wrong(res.Status, "not_deduplicated", "replay of key %s: %s", b.keys[i], res.Raw)
	case res.ExecutionID != b.runs[i]:
		return wrong(res.Status, "wrong_execution", "replay of key %s answered %s, not %s", b.keys[i], res.ExecutionID, b.runs[i])
	}
	return nil
}

// setupSignal creates the order runs that signal mode signals.
func (b *bench) setupSignal(ctx context.Context) error {
	b.note("bench signal: creating %d runs of %s…", b.cfg.runs, benchSignalWorkflow)
	b.runs = make([]string, b.cfg.runs)
	return b.parallel(ctx, b.cfg.runs, func(ctx context.Context, i int) error {
		key := fmt.Sprintf("%s-r%d", b.prefix, i)
		input, _ := json.Marshal(map[string]any{"order_id": key, "amount_cents": 100, "customer_id": "bench",
			"approval_timeout_ms": time.Hour.Milliseconds()})
		res, err := b.keyedStart(ctx, b.api(int64(i)), benchSignalWorkflow, input, key, 0)
		if err != nil {
			return err
		}
		b.runs[i] = res.ExecutionID
		return nil
	})
}

// cleanupSignal terminates the runs of signal mode, best effort.
func (b *bench) cleanupSignal() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := slices.DeleteFunc(slices.Clone(b.runs), func(id string) bool { return id == "" })
	b.note("bench signal: terminating the %d runs…", len(ids))
	err := b.parallel(ctx, len(ids), func(ctx context.Context, i int) error {
		_, err := b.api(int64(i)).Terminate(ctx, ids[i], "harvestctl bench done")
		return err
	})
	if err != nil {
		b.note("bench signal: terminate: %v", err)
	}
}

func (b *bench) signalOp(ctx context.Context, n int64) error {
	id := b.runs[n%int64(len(b.runs))]
	key := fmt.Sprintf("%s-%d", b.prefix, n)
	res, err := b.api(n).Signal(ctx, id, b.cfg.signal, map[string]int64{"n": n}, client.SignalOptions{IdempotencyKey: key})
	if err != nil {
		return err
	}
	if !res.SignalDelivered {
		return wrong(http.StatusOK, "not_delivered", "signal with fresh key %s to %s: %s", key, id, res.Raw)
	}
	return nil
}

func (b *bench) e2eOp(ctx context.Context, n int64) error {
	api := b.api(n)
	wait := benchResultWait
	if b.cfg.pollResult {
		wait = 0
	}
	ctx, cancel := context.WithTimeout(ctx, benchResultMax)
	defer cancel()
	started, err := b.keyedStart(ctx, api, b.cfg.workflow, b.cfg.input, fmt.Sprintf("%s-%d", b.prefix, n), wait)
	if err != nil {
		return err
	}
	res := started.Result
	for res == nil {
		var closed bool
		if res, closed, err = api.Result(ctx, started.ExecutionID, benchResultWait); err != nil {
			return err
		}
		if !closed {
			res = nil
		}
	}
	if !strings.EqualFold(res.State, "completed") {
		raw := res.Raw
		if raw == nil {
			raw = started.Raw // the result came with the start
		}
		return wrong(http.StatusOK, "run_"+strings.ToLower(res.State), "run %s closed %s: %s", started.ExecutionID,
			res.State, raw)
	}
	return nil
}

// parallel runs fn for 0..n-1 on the configured concurrency; the first
// error stops it and is returned.
func (b *bench) parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range min(b.cfg.concurrency, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return firstErr
}

// benchWorker is what one worker measured.
type benchWorker struct {
	lat []time.Duration
	// errs counts failed operations by kind; example keeps one message of
	// each.
	errs    map[string]int64
	example map[string]string
}

// drive runs op on the configured concurrency until --count operations
// were made or --duration passed, then waits for the operations in flight.
// An operation that ctx interrupted is not counted.
func (b *bench) drive(ctx context.Context, op benchOp) *benchSummary {
	var (
		next, done, nfailed atomic.Int64
		wg                  sync.WaitGroup
	)
	workers := make([]*benchWorker, b.cfg.concurrency)
	start := time.Now()
	deadline := start.Add(b.cfg.duration)
	for w := range workers {
		bw := &benchWorker{errs: map[string]int64{}, example: map[string]string{}}
		workers[w] = bw
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if b.cfg.count == 0 && !time.Now().Before(deadline) {
					return
				}
				n := next.Add(1) - 1
				if b.cfg.count > 0 && n >= b.cfg.count {
					return
				}
				t0 := time.Now()
				err := op(ctx, n)
				lat := time.Since(t0)
				if err != nil && ctx.Err() != nil {
					return
				}
				done.Add(1)
				if err != nil {
					nfailed.Add(1)
					kind := errorKind(err)
					if bw.errs[kind]++; bw.errs[kind] == 1 {
						bw.example[kind] = err.Error()
					}
					continue
				}
				bw.lat = append(bw.lat, lat)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	b.follow(start, &done, &nfailed, finished)
	elapsed := time.Since(start)
	return b.summarize(workers, elapsed, ctx.Err() != nil)
}

// follow draws the progress line once a second until finished.
func (b *bench) follow(start time.Time, done, failed *atomic.Int64, finished <-chan struct{}) {
	if b.cfg.quiet {
		<-finished
		return
	}
	p := &progress{w: b.stderr, tty: isTerminal(b.stderr)}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-finished:
			p.end()
			return
		case now := <-tick.C:
			d := done.Load()
			elapsed := now.Sub(start)
			frac := 0.0
			if b.cfg.count > 0 {
				frac = float64(d) / float64(b.cfg.count)
			} else {
				frac = float64(elapsed) / float64(b.cfg.duration)
			}
			frac = min(max(frac, 0), 1)
			rate := float64(d-last) / now.Sub(lastAt).Seconds()
			last, lastAt = d, now
			p.line(fmt.Sprintf("%s %3d%%  bench %s  %s  %d ops  %d errors  %.0f ops/s", bar(frac), int(frac*100),
				b.cfg.mode, elapsed.Truncate(time.Second), d, failed.Load(), rate))
		}
	}
}

// benchSummary is the outcome of a run (the JSON of --output json).
type benchSummary struct {
	Mode        string   `json:"mode"`
	Workflow    string   `json:"workflow"`
	Signal      string   `json:"signal,omitempty"`
	Nodes       []string `json:"nodes"`
	Concurrency int      `json:"concurrency"`
	// Keys (dedup) and Runs (signal) are the set-up runs.
	Keys int `json:"keys,omitempty"`
	Runs int `json:"runs,omitempty"`
	// BatchSize (batch mode) is the starts per operation; ItemsPerSecond
	// is Throughput times it.
	BatchSize      int     `json:"batch_size,omitempty"`
	ItemsPerSecond float64 `json:"items_per_s,omitempty"`
	// ElapsedSeconds is from the first operation to the end of the last.
	ElapsedSeconds float64 `json:"elapsed_s"`
	// Ops counts the operations made, OK and Errors split them.
	Ops    int64 `json:"ops"`
	OK     int64 `json:"ok"`
	Errors int64 `json:"errors"`
	// ErrorsByKind counts errors by "<status> <code>" (or "transport",
	// "timeout", "<status> not_started_fresh", "<status> not_deduplicated",
	// …).
	ErrorsByKind map[string]int64  `json:"errors_by_kind"`
	ErrorExample map[string]string `json:"error_examples,omitempty"`
	// Throughput is OK operations per second.
	Throughput float64 `json:"throughput_ops_per_s"`
	// Latency is of the OK operations (in e2e mode, start to completion).
	Latency benchLatency `json:"latency_ms"`
	// Deduplicated (dedup mode) and Completed (e2e mode) count OK
	// operations by what they proved.
	Deduplicated *int64 `json:"deduplicated,omitempty"`
	Completed    *int64 `json:"completed,omitempty"`
	Interrupted  bool   `json:"interrupted,omitempty"`
}

// benchLatency is in milliseconds.
type benchLatency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

func (b *bench) summarize(workers []*benchWorker, elapsed time.Duration, interrupted bool) *benchSummary {
	s := &benchSummary{Mode: b.cfg.mode, Workflow: b.cfg.workflow, Nodes: b.cfg.addrs, Concurrency: b.cfg.concurrency,
		ElapsedSeconds: elapsed.Seconds(), ErrorsByKind: map[string]int64{}, Interrupted: interrupted}
	switch b.cfg.mode {
	case benchSignal:
		s.Workflow, s.Signal, s.Runs = benchSignalWorkflow, b.cfg.signal, b.cfg.runs
	case benchDedup:
		s.Keys = b.cfg.keys
	case benchBatch:
		s.BatchSize = b.cfg.batchSize
	}
	var lat []time.Duration
	for _, w := range workers {
		lat = append(lat, w.lat...)
		for k, n := range w.errs {
			s.ErrorsByKind[k] += n
			s.Errors += n
			if s.ErrorExample == nil {
				s.ErrorExample = map[string]string{}
			}
			if _, ok := s.ErrorExample[k]; !ok {
				s.ErrorExample[k] = w.example[k]
			}
		}
	}
	s.OK = int64(len(lat))
	s.Ops = s.OK + s.Errors
	if elapsed > 0 {
		s.Throughput = float64(s.OK) / elapsed.Seconds()
	}
	s.Latency = latencies(lat)
	s.ItemsPerSecond = s.Throughput * float64(s.BatchSize)
	switch b.cfg.mode {
	case benchDedup:
		s.Deduplicated = &s.OK
	case benchE2E:
		s.Completed = &s.OK
	}
	return s
}

// latencies summarizes lat (sorted in place), nearest-rank percentiles.
func latencies(lat []time.Duration) benchLatency {
	if len(lat) == 0 {
		return benchLatency{}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	pct := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.999999) - 1
		return ms(lat[min(max(i, 0), len(lat)-1)])
	}
	return benchLatency{Mean: ms(sum / time.Duration(len(lat))), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99),
		Max: ms(lat[len(lat)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func writeBenchSummary(w io.Writer, output string, s *benchSummary) error {
	if output == outputJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{label}, args...)...)
	}
	row("mode", "%s", s.Mode)
	if s.Signal != "" {
		row("signal", "%s (to %d runs of %s)", s.Signal, s.Runs, s.Workflow)
	} else {
		row("workflow", "%s", s.Workflow)
	}
	if s.Keys > 0 {
		row("keys", "%d", s.Keys)
	}
	row("nodes", "%s", strings.Join(s.Nodes, ", "))
	row("concurrency", "%d", s.Concurrency)
	row("elapsed", "%.2fs", s.ElapsedSeconds)
	row("ops", "%d", s.Ops)
	row("ok", "%d", s.OK)
	if s.Deduplicated != nil {
		row("deduplicated", "%d", *s.Deduplicated)
	}
	if s.Completed != nil {
		row("completed", "%d", *s.Completed)
	}
	row("errors", "%d", s.Errors)
	kinds := make([]string, 0, len(s.ErrorsByKind))
	for k := range s.ErrorsByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		row("  "+k, "%d  e.g. %s", s.ErrorsByKind[k], clean(s.ErrorExample[k]))
	}
	row("throughput", "%.1f ops/s", s.Throughput)
	if s.BatchSize > 0 {
		row("items", "%.1f items/s (%d per batch)", s.ItemsPerSecond, s.BatchSize)
	}
	row("latency p50", "%.2f ms", s.Latency.P50)
	row("latency p90", "%.2f ms", s.Latency.P90)
	row("latency p99", "%.2f ms", s.Latency.P99)
	row("latency max", "%.2f ms", s.Latency.Max)
	row("latency mean", "%.2f ms", s.Latency.Mean)
	if s.Interrupted {
		row("interrupted", "yes")
	}
	return tw.Flush()
}
