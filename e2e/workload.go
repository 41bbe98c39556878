package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Operation kinds.
const (
	KindStart    = "start"             // keyed start (no workflow id: the server mints it)
	KindSignal   = "signal"            // keyed signal to an execution
	KindSWS      = "sws"               // keyed signal-with-start
	KindCancel   = "cancel"            // cooperative cancel of an execution (idempotent by nature, no key)
	KindUpdate   = "update"            // keyed update of an execution (workload_cart.go)
	KindUWS      = "update_with_start" // keyed update-with-start of a cart (workload_cart.go)
	KindBatchJob = "batch_job"         // keyed batch job creation (workload_batch.go)
)

// Workflows and the signal of the demo the workload drives.
const (
	wfOnboarding = "onboarding"
	wfOrder      = "order"
	wfCounter    = "counter" // continues as new (workload_counter.go)
	sigApproved  = "approved"
	sigAdd       = "add" // the counter's signal
)

// Op is one recorded client operation: a logical request sent through
// random nodes until it is answered (the same key on every attempt).
type Op struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"`
	Workflow   string    `json:"workflow"`
	Key        string    `json:"key"`                   // start key (start) or signal key (signal, sws)
	WorkflowID string    `json:"workflow_id,omitempty"` // sws
	Target     string    `json:"target,omitempty"`      // signal, cancel: execution id
	Dup        bool      `json:"dup,omitempty"`         // a deliberate re-delivery of an answered op
	Chain      string    `json:"chain,omitempty"`       // counter add: the first run of its continue-as-new chain
	Every      int       `json:"every,omitempty"`       // counter start: signals per run
	Until      int       `json:"until,omitempty"`       // counter start: signals of the chain
	Children   int       `json:"children,omitempty"`    // parent start: its children
	IntervalMS int64     `json:"interval_ms,omitempty"` // schedule create: its interval
	Overlap    string    `json:"overlap,omitempty"`     // schedule create: its overlap policy
	PolicyKey  string    `json:"policy_key,omitempty"`  // deferred start: its debounce, batch or throttle key
	Probe      bool      `json:"probe,omitempty"`       // sent by the nemesis to time recovery
	Redelivery bool      `json:"redelivery,omitempty"`  // sent after the heal for an unanswered op
	Begin      time.Time `json:"begin"`
	End        time.Time `json:"end"`
	Attempts   []Attempt `json:"attempts"`

	OK     bool   `json:"ok"` // answered 2xx
	Status int    `json:"status,omitempty"`
	ExecID string `json:"execution_id,omitempty"`
	// DeferredID is the item a deferred start's 202 named.
	DeferredID string `json:"deferred_id,omitempty"`
	Fresh      *bool  `json:"started_fresh,omitempty"`
	Dedup      *bool  `json:"deduplicated,omitempty"`
	Delivered  *bool  `json:"signal_delivered,omitempty"`
	Err        string `json:"error,omitempty"` // last error when !OK

	// Current is the chain's current run as the answer named it: a
	// signal's current_execution_id, a keyed start replay's
	// latest_execution_id (empty when the answer named none).
	Current string `json:"current,omitempty"`
	// Outcome is an update's answer: completed, failed or accepted.
	Outcome string `json:"outcome,omitempty"`

	// Cancel answers: the 200's flags, and the state of a 200 or a 409.
	CancelRequested *bool  `json:"cancel_requested,omitempty"`
	NewlyCancelled  *bool  `json:"newly_cancelled,omitempty"`
	State           string `json:"state,omitempty"`
	Code            string `json:"code,omitempty"` // error code of a non-2xx answer
}

// codeTerminal is the error code of a signal or cancel to a closed run.
const codeTerminal = "execution_terminal"

// codeConflict is the error code of a schedule create that finds the
// schedule (its own earlier attempt) there.
const codeConflict = "conflict"

// Answered reports whether op got a definite answer that is not a
// refusal: a 2xx, or for a cancel a 409 execution_terminal (the run was
// closed already, which a cancel racing the run's end may find), or for
// a schedule create a 409 conflict (an earlier attempt created it).
func (op *Op) Answered() bool {
	return op.OK || op.Kind == KindCancel && op.Status == http.StatusConflict && op.Code == codeTerminal ||
		op.Kind == KindSchedule && op.Status == http.StatusConflict && op.Code == codeConflict
}

// Attempt is one HTTP request of an Op.
type Attempt struct {
	Node   int           `json:"node"`
	Status int           `json:"status,omitempty"`
	Err    string        `json:"error,omitempty"`
	Dur    time.Duration `json:"dur"`
}

// History is the record of every operation, safe for concurrent use.
type History struct {
	mu  sync.Mutex
	ops []*Op
	seq atomic.Int64
	out *json.Encoder // JSON lines, for post-mortems
}

// NewHistory records into memory and, if w is non-nil, as JSON lines to w.
func NewHistory(w io.Writer) *History {
	h := &History{}
	if w != nil {
		h.out = json.NewEncoder(w)
	}
	return h
}

func (h *History) add(op *Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	if h.out != nil {
		_ = h.out.Encode(op)
	}
}

// Ops returns the recorded operations in completion order.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Op(nil), h.ops...)
}

// Add records op (tests build synthetic histories with it).
func (h *History) Add(op *Op) { h.add(op) }

// Client sends operations through random nodes and records them.
type Client struct {
	Nodes   []string // API base URLs
	Token   string   // bearer token of every request ("" for none)
	Hist    *History
	Attempt time.Duration // per-attempt timeout
	http    *http.Client
}

// NewClient returns a client over the given node URLs that sends token
// ("" for none) on every request.
func NewClient(nodes []string, token string, hist *History) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{Nodes: nodes, Token: token, Hist: hist, Attempt: 5 * time.Second, http: &http.Client{Transport: tr}}
}

// WithTLS makes c dial the nodes with cfg (nil: clear text) and returns c.
func (c *Client) WithTLS(cfg *tls.Config) *Client {
	c.http.Transport.(*http.Transport).TLSClientConfig = cfg
	return c
}

// request is what an Op sends.
type request struct {
	method, path string
	key          string // Idempotency-Key header ("" for none)
	body         any
}

func (c *Client) requestOf(op *Op) request {
	switch op.Kind {
	case KindStart:
		if req, ok := familyStart(op); ok {
			return req
		}
		var input any = map[string]any{"user_id": rand.IntN(1 << 30)}
		switch op.Workflow {
		case wfOrder:
			input = orderInput(op.Key)
		case wfCounter:
			input = map[string]any{"every": op.Every, "until": op.Until}
		case wfReport:
			input = reportInput(op.Key)
		case wfExport:
			input = exportInput(op.Key)
		case wfCart:
			input = map[string]any{}
		case wfRace:
			input = raceInput()
		}
		return request{http.MethodPost, "/api/harvest/workflows/" + op.Workflow + "/start", op.Key,
			map[string]any{"input": input}}
	case KindSignal:
		if op.Workflow == wfCounter {
			return counterAdd(op)
		}
		if op.Workflow == wfCart {
			return cartCheckout(op)
		}
		return request{http.MethodPost, "/api/harvest/workflows/" + op.Target + "/signal/" + sigApproved, op.Key,
			map[string]any{"by": "e2e"}}
	case KindSWS:
		return request{http.MethodPost, "/api/harvest/workflows/" + op.Workflow + "/signal-with-start", op.Key,
			map[string]any{"workflow_id": op.WorkflowID, "signal_name": sigApproved, "signal_payload": map[string]any{"by": "sws"},
				"input": orderInput(op.WorkflowID), "idempotency_key": op.Key}}
	case KindUpdate:
		return cartAddItem(op)
	case KindUWS:
		return cartUpdateWithStart(op)
	case KindBatchJob:
		return batchJobRequest(op)
	case KindSchedule, KindSchedulePause:
		return scheduleRequest(op)
	case KindDebounce, KindBatch, KindThrottle:
		return deferredRequest(op, 0)
	case KindWebhookCreate, KindWebhook:
		return webhookRequest(op)
	case KindReset:
		return resetRequest(op)
	case KindCancel:
		// The cancel route takes no idempotency key (the header is ignored):
		// a repeat finds the recorded request.
		return request{http.MethodPost, "/api/harvest/workflows/" + op.Target + "/cancel", op.Key,
			map[string]any{"reason": "e2e " + op.Key}}
	}
	panic("unknown op kind " + op.Kind)
}

// orderInput waits long for the approval: the workload always sends it,
// possibly only after the heal.
func orderInput(id string) map[string]any {
	return map[string]any{"order_id": id, "amount_cents": 100, "customer_id": "c-e2e",
		"approval_timeout_ms": int64(2 * time.Hour / time.Millisecond), "sleep_ms": 20}
}

// Do sends op until it is answered 2xx, a non-retryable 4xx comes back, or
// ctx ends; node >= 1 pins every attempt to that node (probes). It records
// op in the history and returns it.
func (c *Client) Do(ctx context.Context, op *Op, node int) *Op {
	op.ID = c.Hist.seq.Add(1)
	op.Begin = time.Now()
	req := c.requestOf(op)
	body, _ := json.Marshal(req.body)
	backoff := 50 * time.Millisecond
	for {
		n := node
		if n < 1 {
			n = 1 + rand.IntN(len(c.Nodes))
		}
		if isDeferredOp(op) && len(op.Attempts) > 0 {
			// Each attempt of a deferred start carries an input of its own.
			req = deferredRequest(op, len(op.Attempts))
			body, _ = json.Marshal(req.body)
		}
		a, retry := c.attempt(ctx, op, n, req, body)
		op.Attempts = append(op.Attempts, a)
		if !op.OK {
			op.Err = fmt.Sprintf("node %d: %s", a.Node, a.Err)
		}
		if op.OK || !retry {
			break
		}
		t := time.NewTimer(backoff + rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			op.Err += " (gave up: " + context.Cause(ctx).Error() + ")"
			op.End = time.Now()
			c.Hist.add(op)
			return op
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
	op.End = time.Now()
	c.Hist.add(op)
	return op
}

func (c *Client) attempt(ctx context.Context, op *Op, n int, req request, body []byte) (Attempt, bool) {
	a := Attempt{Node: n}
	t0 := time.Now()
	defer func() { a.Dur = time.Since(t0) }()
	actx, cancel := context.WithTimeout(ctx, c.Attempt)
	defer cancel()
	hr, err := http.NewRequestWithContext(actx, req.method, c.Nodes[n-1]+req.path, bytes.NewReader(body))
	if err != nil {
		a.Err = err.Error()
		return a, false
	}
	hr.Header.Set("Content-Type", "application/json")
	if req.key != "" {
		hr.Header.Set("Idempotency-Key", req.key)
	}
	if op.Kind == KindWebhook {
		signWebhook(hr.Header, body, time.Now()) // over the bytes sent, at this attempt
	}
	if c.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		a.Err = err.Error()
		a.Dur = time.Since(t0)
		return a, true
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a.Status = resp.StatusCode
	a.Dur = time.Since(t0)
	if resp.StatusCode/100 != 2 {
		a.Err = strings.TrimSpace(string(b))
		op.Status = resp.StatusCode
		var e struct {
			Code        string `json:"code"`
			ExecutionID string `json:"execution_id"`
			State       string `json:"state"`
		}
		_ = json.Unmarshal(b, &e) // best effort: the raw body is in a.Err
		op.Code, op.State = e.Code, e.State
		if (op.Kind == KindCancel || op.Kind == KindSchedule) && op.Answered() {
			op.ExecID, op.Err = e.ExecutionID, ""
			return a, false
		}
		// 5xx and 429 are transient. Any other 4xx is a definite answer
		// (a client or server bug here): recorded, not retried.
		return a, resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
	}
	var out struct {
		ExecutionID     string `json:"execution_id"`
		DeferredID      string `json:"deferred_id"`
		StartedFresh    *bool  `json:"started_fresh"`
		Deduplicated    *bool  `json:"deduplicated"`
		SignalDelivered *bool  `json:"signal_delivered"`
		Current         string `json:"current_execution_id"`
		Latest          string `json:"latest_execution_id"`
		CancelRequested *bool  `json:"cancel_requested"`
		NewlyCancelled  *bool  `json:"newly_cancelled"`
		State           string `json:"state"`
		Outcome         string `json:"outcome"`
		BatchID         string `json:"batch_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		a.Err = "bad answer: " + err.Error()
		return a, true
	}
	op.OK, op.Status, op.Err, op.Code = true, resp.StatusCode, "", ""
	op.ExecID, op.Fresh, op.Dedup, op.Delivered = cmp.Or(out.ExecutionID, out.BatchID), out.StartedFresh, out.Deduplicated, out.SignalDelivered
	op.CancelRequested, op.NewlyCancelled, op.State = out.CancelRequested, out.NewlyCancelled, out.State
	op.DeferredID = out.DeferredID
	op.Current = cmp.Or(out.Current, out.Latest)
	op.Outcome = out.Outcome
	return a, false
}

// Workload runs Workers goroutines of keyed traffic until ctx ends. An
// unanswered operation (its deadline passed during a fault) parks the rest
// of its chain; Redeliver finishes the parked chains after the heal, as a
// webhook source retries until it is answered.
type Workload struct {
	Client    *Client
	Workers   int
	OpTimeout time.Duration // per operation, across its retries
	DupRate   float64       // probability of re-delivering an answered op
	Pace      time.Duration // pause between a worker's chains
	// CancelShare is the share of chains that start an order and cancel
	// it (0: none). Most cancel while the order waits for its approval
	// (it refunds its charge), some at once (during the charge), some
	// after approving it (racing its end).
	CancelShare float64
	// CounterShare is the share of chains that start a counter (a
	// continue-as-new chain) and send it its adds (0: none).
	CounterShare float64
	// ParentShare and ApproverShare are the shares of chains that start a
	// parent with children and an order with an approver
	// (workload_family.go; 0: none).
	ParentShare, ApproverShare float64
	// CartShare is the share of chains that start a cart, send it keyed
	// updates and check it out (workload_cart.go; 0: none).
	CartShare float64
	// BatchShare is the share of chains that start approval races and a
	// batch job signalling them (workload_batch.go).
	BatchShare float64
	// ResetShare is the share of chains that start an order, reset it and
	// approve it (workload_reset.go).
	ResetShare float64
	// ReportShare is the share of chains that start a report, a workflow
	// under a concurrency limit per customer and shard, or, as many, an
	// export, under one per tenant across the cluster (workload_flow.go;
	// 0: none).
	ReportShare float64
	// Schedules is how many schedules the workload creates, one every
	// ScheduleEvery, each paused after ScheduleLife
	// (workload_schedule.go; 0: none).
	Schedules                   int
	ScheduleEvery, ScheduleLife time.Duration
	// DebounceKeys, BatchKeys and ThrottleKeys are how many policy keys
	// of each kind get deferred starts (workload_deferred.go; 0: none).
	DebounceKeys, BatchKeys, ThrottleKeys int
	// WebhookEvery is the mean pause between two webhook events
	// (workload_webhook.go; 0: no webhooks).
	WebhookEvery time.Duration

	mu     sync.Mutex
	parked []chain
	bugs   []string // the workload's own errors (a signal without a target)
	seq    atomic.Int64
}

// chain is a logical client action: its ops run in order, the output of a
// start feeding the signal that follows it.
type chain struct {
	ops []*Op
	// refused: the first op was answered with a definite 4xx. The checker
	// reports it; re-sending it would only repeat the refusal.
	refused bool
	// cancelAfter is the pause before the chain's cancel or reset (its first
	// sending only: a re-delivery cancels at once), so that most cancels
	// find the order charged and waiting.
	cancelAfter time.Duration
	// runs is a counter chain's first and latest known run (nil for
	// other chains), shared by the chain's parked remainder.
	runs *chainRuns
	// pauseAfter is a schedule's life: the pause before its pause op
	// (its first sending only, as cancelAfter).
	pauseAfter time.Duration
}

// waitBefore is how long the first sending of op waits in ch.
func (ch chain) waitBefore(op *Op) time.Duration {
	switch op.Kind {
	case KindCancel, KindReset:
		return ch.cancelAfter
	case KindSchedulePause:
		return ch.pauseAfter
	}
	return 0
}

// tail is the rest of ch from op i, to park.
func (ch chain) tail(i int, refused bool) chain {
	return chain{ops: ch.ops[i:], refused: refused, runs: ch.runs}
}

// Bugs returns the workload's own errors: operations it must not send
// (a signal with no execution id) and therefore did not send.
func (w *Workload) Bugs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bugs...)
}

func (w *Workload) bug(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bugs = append(w.bugs, fmt.Sprintf(format, args...))
}

func (w *Workload) newChain() chain {
	n := w.seq.Add(1)
	if rand.Float64() < w.CancelShare {
		return cancelChain(n)
	}
	if rand.Float64() < w.CounterShare {
		return counterChain(n)
	}
	if rand.Float64() < w.ParentShare {
		return parentChain(n)
	}
	if rand.Float64() < w.ApproverShare {
		return approverChain(n)
	}
	if rand.Float64() < w.CartShare {
		return cartChain(n)
	}
	if rand.Float64() < w.BatchShare {
		return batchChain(n)
	}
	if rand.Float64() < w.ResetShare {
		return resetChain(n)
	}
	if r := rand.Float64(); r < w.ReportShare {
		if r < w.ReportShare/2 {
			return reportChain(n)
		}
		return exportChain(n)
	}
	switch r := rand.Float64(); {
	case r < 0.4:
		return chain{ops: []*Op{{Kind: KindStart, Workflow: wfOnboarding, Key: fmt.Sprintf("onb-%d", n)}}}
	case r < 0.7:
		return chain{ops: []*Op{
			{Kind: KindStart, Workflow: wfOrder, Key: fmt.Sprintf("ord-%d", n)},
			{Kind: KindSignal, Workflow: wfOrder, Key: fmt.Sprintf("ord-%d-approved", n)},
		}}
	default:
		return chain{ops: []*Op{{Kind: KindSWS, Workflow: wfOrder, WorkflowID: fmt.Sprintf("sws-%d", n), Key: fmt.Sprintf("sws-%d-approved", n)}}}
	}
}

// cancelChain starts order n and cancels it: 70 % after a pause that
// mostly finds it charged and waiting for its approval (it refunds), 15 %
// at once (often during the charge: no refund), 15 % after approving it
// (the cancel races the order's short sleep and its end: a 409 or a
// refund).
func cancelChain(n int64) chain {
	start := &Op{Kind: KindStart, Workflow: wfOrder, Key: fmt.Sprintf("ordc-%d", n)}
	cancel := &Op{Kind: KindCancel, Workflow: wfOrder, Key: fmt.Sprintf("ordc-%d-cancel", n)}
	switch r := rand.Float64(); {
	case r < 0.7:
		return chain{ops: []*Op{start, cancel}, cancelAfter: 300*time.Millisecond + rand.N(700*time.Millisecond)}
	case r < 0.85:
		return chain{ops: []*Op{start, cancel}}
	default:
		approve := &Op{Kind: KindSignal, Workflow: wfOrder, Key: fmt.Sprintf("ordc-%d-approved", n)}
		return chain{ops: []*Op{start, approve, cancel}, cancelAfter: rand.N(40 * time.Millisecond)}
	}
}

// Run blocks until ctx ends.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { w.runSchedules(ctx) })
	wg.Go(func() { w.runDeferred(ctx) })
	wg.Go(func() { w.runWebhooks(ctx) })
	for range w.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				w.runChain(ctx, w.newChain(), w.OpTimeout, false)
				if w.Pace > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(w.Pace):
					}
				}
			}
		})
	}
	wg.Wait()
}

// runChain runs the ops of ch; it parks the rest of the chain when an op is
// not answered in time or the workload stops. A signal is sent only to the
// execution an answered start named: the start's answer is written into the
// signal's template before anything can park it, so a parked signal always
// carries its target, and a parked start is re-sent (same key) before it.
func (w *Workload) runChain(ctx context.Context, ch chain, timeout time.Duration, redelivery bool) {
	for i, tmpl := range ch.ops {
		if ctx.Err() != nil {
			w.park(ch.tail(i, false))
			return
		}
		if needsTarget(tmpl) && tmpl.Target == "" {
			// Never sent: an empty id is refused (400) and the execution
			// would wait for its approval forever.
			w.bug("chain %q: %s %q has no execution id (its start was not answered in this chain)", ch.ops[0].Key, tmpl.Kind, tmpl.Key)
			return
		}
		if wait := ch.waitBefore(tmpl); wait > 0 && !redelivery {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				w.park(ch.tail(i, false))
				return
			case <-t.C:
			}
		}
		op := *tmpl
		op.Redelivery = redelivery
		ch.runs.address(&op)
		octx, cancel := context.WithTimeout(ctx, timeout)
		res := w.Client.Do(octx, &op, 0)
		cancel()
		if !res.Answered() {
			// Unanswered, or refused with a 4xx (which the checker reports:
			// the workload sends nothing a correct server refuses). Either
			// way the chain is kept, as a webhook source with a dead-letter
			// queue would, so the other promises are still checked; an
			// unanswered one is re-sent after the heal.
			refused := res.Status/100 == 4 && res.Status != http.StatusTooManyRequests
			w.park(ch.tail(i, refused))
			return
		}
		ch.runs.learn(res)
		if tmpl.Kind == KindStart || tmpl.Kind == KindUWS {
			// Feed the answer to the rest of the chain now, before a dup
			// or a stop can park it.
			for _, next := range ch.ops[i+1:] {
				if needsTarget(next) && next.Target == "" {
					next.Target = res.ExecID
				}
				if next.Workflow == wfCounter && next.Chain == "" {
					next.Chain = res.ExecID
				}
			}
		}
		if !redelivery && rand.Float64() < w.DupRate {
			dup := *tmpl
			dup.Dup, dup.Target = true, op.Target
			ch.runs.redirect(&dup) // a counter add: to the chain's other known run

			dctx, cancel := context.WithTimeout(ctx, timeout)
			w.Client.Do(dctx, &dup, 0)
			cancel()
		}
	}
}

func (w *Workload) park(ch chain) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Fresh templates: a parked op is re-sent with the same key.
	ops := make([]*Op, len(ch.ops))
	for i, o := range ch.ops {
		c := *o
		ops[i] = &c
	}
	w.parked = append(w.parked, chain{ops: ops, refused: ch.refused, runs: ch.runs})
}

// Redeliver re-sends every parked chain (same keys) until each is answered
// or ctx ends: a chain whose op is again unanswered within timeout (the
// per-op budget, across that op's retries) is re-sent in another round,
// for as long as ctx lasts. Chains refused with a definite 4xx are not
// re-sent. It returns how many parked chains it finished and how many are
// left (unanswered when ctx ended, or refused).
func (w *Workload) Redeliver(ctx context.Context, timeout time.Duration) (done, left int) {
	w.mu.Lock()
	parked := w.parked
	w.parked = nil
	w.mu.Unlock()
	var kept []chain // refused: not re-sent
	total := len(parked)
	for round := 0; len(parked) > 0 && ctx.Err() == nil; round++ {
		var todo []chain
		for _, ch := range parked {
			if ch.refused {
				kept = append(kept, ch)
			} else {
				todo = append(todo, ch)
			}
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, max(w.Workers, 1))
		for _, ch := range todo {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				w.runChain(ctx, ch, timeout, true)
			})
		}
		wg.Wait()
		w.mu.Lock()
		parked = w.parked
		w.parked = nil
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.parked = append(append(w.parked, kept...), parked...)
	left = len(w.parked)
	w.mu.Unlock()
	return total - left, left
}

// Nodes lists the API URLs of hosts 1..n.
func Nodes(c *Cluster) []string {
	var urls []string
	for i := 1; i <= c.Net.N; i++ {
		urls = append(urls, c.URL(i))
	}
	return urls
}

// WriteHistory writes the ops as JSON lines (sorted by id) to path.
func WriteHistory(path string, ops []*Op) error {
	sorted := append([]*Op(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, o := range sorted {
		_ = enc.Encode(o)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
