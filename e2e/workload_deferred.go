package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Deferred starts: the deferred part of the workload.
//
// While the load runs, two senders per policy key submit deferred starts
// through random nodes: debounce keys get bursts (2–5 starts 50–300 ms
// apart, then a pause longer than the window), batch keys a start every
// 0.2–1 s, the throttle key a start every 0.3–0.7 s per sender (slower
// than its rate, so its backlog drains). A deferred start is not
// client-idempotent: every attempt of a submission carries an input of
// its own, its token "<op id>.<attempt>", so that the checker
// (checker_deferred.go) can tell where each attempt's input went — an
// answered attempt's into exactly the item its 202 named, an attempt
// whose answer was lost into at most one item, a refused one into none.
// A submission unanswered within its budget is parked and re-sent after
// the heal (a new submission, as a source with a dead-letter queue would
// send it again).

// Operation kinds of the deferred part: one submission each (its key is
// the submission's id).
const (
	KindDebounce = "debounce"
	KindBatch    = "batch"
	KindThrottle = "throttle"
)

// isDeferredOp reports whether op is a deferred start.
func isDeferredOp(op *Op) bool {
	return op.Kind == KindDebounce || op.Kind == KindBatch || op.Kind == KindThrottle
}

// The policies' limits: short, so that items fire during the load and
// within seconds of the heal.
const (
	debounceWindow  = time.Second
	debounceMaxWait = 4 * time.Second
	batchMaxSize    = 4
	batchMaxWait    = 2 * time.Second
	throttleRate    = 5 // per throttlePer
	throttlePer     = time.Second
	throttleBacklog = 1000
	// deferredSenders is how many goroutines submit to each policy key.
	deferredSenders = 2
)

// deferredWorkflow is the workflow a policy's runs start: a batch's run
// gets the list of its inputs (tally takes a list), the others one input.
func deferredWorkflow(kind string) string {
	if kind == KindBatch {
		return wfTally
	}
	return wfChild
}

// wfTally counts a batch's inputs (demo/tally.go).
const wfTally = "tally"

// deferredToken names attempt i of op: its input's token.
func deferredToken(id int64, attempt int) string { return fmt.Sprintf("%d.%d", id, attempt) }

// debounceWorkflowID is the workflow id a debounce attempt sends (the
// item's run takes its last start's).
func debounceWorkflowID(token string) string { return "dbw-" + token }

// deferredRequest is attempt i of a deferred submission: no idempotency
// key (a key with a policy is refused), an input naming the attempt.
func deferredRequest(op *Op, attempt int) request {
	tok := deferredToken(op.ID, attempt)
	path := "/api/harvest/workflows/" + op.Workflow + "/start"
	switch op.Kind {
	case KindDebounce:
		return request{http.MethodPost, path, "", map[string]any{
			"input": map[string]any{"activities": 1, "token": tok}, "workflow_id": debounceWorkflowID(tok),
			"debounce": map[string]any{"key": op.PolicyKey, "window": debounceWindow.String(), "max_wait": debounceMaxWait.String()}}}
	case KindBatch:
		return request{http.MethodPost, path, "", map[string]any{
			"input": map[string]any{"token": tok}, "batch_key": op.PolicyKey, "batch_max_size": batchMaxSize,
			"batch_max_wait": batchMaxWait.String()}}
	}
	return request{http.MethodPost, path, "", map[string]any{
		"input":    map[string]any{"activities": 1, "token": tok},
		"throttle": map[string]any{"key": op.PolicyKey, "rate": throttleRate, "per": throttlePer.String(), "max_backlog": throttleBacklog}}}
}

// deferredKeys lists the workload's policy keys: kind -> keys.
func (w *Workload) deferredKeys() map[string][]string {
	keys := map[string][]string{}
	for kind, n := range map[string]int{KindDebounce: w.DebounceKeys, KindBatch: w.BatchKeys, KindThrottle: w.ThrottleKeys} {
		for i := 1; i <= n; i++ {
			keys[kind] = append(keys[kind], fmt.Sprintf("%s-%d", kind[:3], i))
		}
	}
	return keys
}

// runDeferred runs the senders of every policy key until ctx ends.
func (w *Workload) runDeferred(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for kind, keys := range w.deferredKeys() {
		for _, key := range keys {
			for range deferredSenders {
				wg.Go(func() { w.sendDeferred(ctx, kind, key) })
			}
		}
	}
}

// sendDeferred submits deferred starts of kind under key until ctx ends,
// paced as the package doc says.
func (w *Workload) sendDeferred(ctx context.Context, kind, key string) {
	for burst := 0; ctx.Err() == nil; burst-- {
		if burst <= 0 && kind == KindDebounce {
			burst = 2 + rand.IntN(4)
		}
		op := &Op{Kind: kind, Workflow: deferredWorkflow(kind), PolicyKey: key, Key: fmt.Sprintf("%s-%d", key, w.seq.Add(1))}
		w.runChain(ctx, chain{ops: []*Op{op}}, w.OpTimeout, false)
		var pause time.Duration
		switch {
		case kind == KindDebounce && burst > 1:
			pause = 50*time.Millisecond + rand.N(250*time.Millisecond)
		case kind == KindDebounce:
			pause = debounceWindow + 500*time.Millisecond + rand.N(1500*time.Millisecond)
		case kind == KindBatch:
			pause = 200*time.Millisecond + rand.N(800*time.Millisecond)
		default:
			pause = 300*time.Millisecond + rand.N(400*time.Millisecond)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// PendingDeferred asks a random node for GET /admin/deferred: how many
// items are pending or firing in every shard (an error when a shard
// could not be read).
func (c *Client) PendingDeferred(ctx context.Context) (int, error) {
	n := 1 + rand.IntN(len(c.Nodes))
	actx, cancel := context.WithTimeout(ctx, c.Attempt)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, c.Nodes[n-1]+"/api/harvest/admin/deferred", nil)
	if err != nil {
		return 0, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("node %d: GET /admin/deferred: HTTP %d: %s", n, resp.StatusCode, b)
	}
	var out struct {
		Deferred []json.RawMessage `json:"deferred"`
		Status   string            `json:"status"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("node %d: GET /admin/deferred: %w", n, err)
	}
	if out.Status == "partial" {
		return len(out.Deferred), fmt.Errorf("node %d: GET /admin/deferred: some shard could not be read", n)
	}
	return len(out.Deferred), nil
}

// WaitDeferred polls GET /admin/deferred until no item is pending or
// firing, or timeout; it returns how many were left at the last answer
// (-1: none came) and how long it took. The checker reads the items
// themselves from the shard databases and reports what did not fire.
func WaitDeferred(ctx context.Context, c *Client, timeout time.Duration) (int, time.Duration) {
	t0 := time.Now()
	deadline := t0.Add(timeout)
	left := -1
	for {
		n, err := c.PendingDeferred(ctx)
		if err == nil {
			left = n
			if n == 0 {
				return 0, time.Since(t0)
			}
		}
		if time.Now().After(deadline) {
			return left, time.Since(t0)
		}
		select {
		case <-ctx.Done():
			return left, time.Since(t0)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
