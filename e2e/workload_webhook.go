package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Webhook deliveries: the webhook part of the workload.
//
// The workload creates two generic HMAC receivers (the delivery id at
// /id, signed in webhookSignatureHeader over "<t>.<body>", t the
// Webhook-Timestamp every new generic receiver checks by default, sent
// afresh with each attempt): webhookName starts noop_chain,
// webhookSWSName signals "add" with signal-with-start to the counter
// whose workflow id is at /wf (until 3: three events complete it). It
// waits until every node knows both, then delivers signed events through
// random nodes until the load ends — two thirds single events to the
// first, one third groups of three events to one counter through the
// second: each delivery is retried on transport errors, 5xx and 429, as
// a provider retries, and delivered again (the same id and body) through
// a random node once or twice after its answer, as a provider redelivers
// (a counter's last event's redeliveries find it closed). The checker
// (checker_webhook.go) counts the runs per delivery id and per counter.

// Operation kinds of the webhook part.
const (
	KindWebhookCreate = "webhook_create" // create the receiver (idempotent: the same config again answers 201)
	KindWebhook       = "webhook"        // deliver an event (its delivery id is the op's key)
)

// The receiver the workload creates.
const (
	webhookName            = "chaos"
	webhookSWSName         = "chaos-sws"
	webhookSecret          = "chaos-webhook-secret"
	webhookSignatureHeader = "X-Chaos-Signature"
	// webhookTimestampHeader is the timestamp header the receivers get
	// by default (webhook.TimestampHeaderDefault).
	webhookTimestampHeader = "Webhook-Timestamp"
	webhookKeyPrefix       = "hv:webhook:" + webhookName + ":"
	webhookSWSKeyPrefix    = "hv:webhook:" + webhookSWSName + ":"
	// webhookCounterPrefix begins the workflow ids of the counters the
	// signal-with-start receiver feeds; webhookCounterEvents events
	// complete one.
	webhookCounterPrefix = "whc-"
	webhookCounterEvents = 3
)

// webhookReceiver is the receiver a delivery of op goes to.
func webhookReceiver(op *Op) string {
	if op.Workflow == wfCounter {
		return webhookSWSName
	}
	return webhookName
}

// isWebhookOp reports whether op is of the webhook part.
func isWebhookOp(op *Op) bool { return op.Kind == KindWebhookCreate || op.Kind == KindWebhook }

// webhookPayload is the event of a delivery of op: the run's input (and
// a counter's add).
func webhookPayload(op *Op) []byte {
	ev := map[string]any{"id": op.Key, "activities": 1}
	if op.Workflow == wfCounter {
		ev = map[string]any{"id": op.Key, "n": 1, "wf": op.WorkflowID, "until": webhookCounterEvents, "every": webhookCounterEvents + 2}
	}
	b, _ := json.Marshal(ev)
	return b
}

// webhookSignature is the hex HMAC-SHA256 of "<ts>.<body>" under the
// receiver's secret.
func webhookSignature(ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(webhookSecret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// signWebhook sets a delivery's timestamp (at) and signature headers, as
// a provider does on every attempt.
func signWebhook(h http.Header, body []byte, at time.Time) {
	ts := strconv.FormatInt(at.Unix(), 10)
	h.Set(webhookTimestampHeader, ts)
	h.Set(webhookSignatureHeader, "sha256="+webhookSignature(ts, body))
}

// webhookRequest is the request of a webhook op.
func webhookRequest(op *Op) request {
	if op.Kind == KindWebhookCreate {
		body := map[string]any{"name": op.Key, "provider": "generic", "secret": webhookSecret, "action": "start", "workflow": op.Workflow,
			"key_pointer": "/id", "signature_header": webhookSignatureHeader}
		if op.Key == webhookSWSName {
			body["action"], body["signal"], body["workflow_id_pointer"] = "signal_with_start", sigAdd, "/wf"
		}
		return request{http.MethodPost, "/api/harvest/admin/webhooks", "", body}
	}
	// The client signs the bytes it sends (Client.attempt).
	return request{http.MethodPost, "/api/harvest/webhooks/" + webhookReceiver(op), "", json.RawMessage(webhookPayload(op))}
}

// runWebhooks creates the receiver and delivers events until ctx ends.
func (w *Workload) runWebhooks(ctx context.Context) {
	if w.WebhookEvery <= 0 {
		return
	}
	for _, create := range []*Op{{Kind: KindWebhookCreate, Workflow: wfChild, Key: webhookName},
		{Kind: KindWebhookCreate, Workflow: wfCounter, Key: webhookSWSName}} {
		for ctx.Err() == nil {
			op := *create
			octx, cancel := context.WithTimeout(ctx, w.OpTimeout)
			res := w.Client.Do(octx, &op, 0)
			cancel()
			if res.OK {
				break
			}
			if res.Status/100 == 4 && res.Status != http.StatusTooManyRequests {
				w.bug("webhook receiver %q create refused %d: %s", create.Key, res.Status, res.Err)
				return
			}
		}
		if err := w.Client.waitWebhook(ctx, create.Key, time.Minute); err != nil {
			if ctx.Err() == nil {
				w.bug("webhook receiver %q: %v", create.Key, err)
			}
			return
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		var ops []*Op
		deliver := func(workflow, wfID string) {
			id := fmt.Sprintf("evt-%d", w.seq.Add(1))
			ops = append(ops, &Op{Kind: KindWebhook, Workflow: workflow, WorkflowID: wfID, Key: id})
			for range 1 + rand.IntN(2) {
				ops = append(ops, &Op{Kind: KindWebhook, Workflow: workflow, WorkflowID: wfID, Key: id, Dup: true})
			}
		}
		if rand.IntN(3) > 0 {
			deliver(wfChild, "")
		} else {
			wfID := fmt.Sprintf("%s%d", webhookCounterPrefix, w.seq.Add(1))
			for range webhookCounterEvents {
				deliver(wfCounter, wfID)
			}
		}
		wg.Go(func() { w.runChain(ctx, chain{ops: ops}, w.OpTimeout, false) })
		select {
		case <-ctx.Done():
		case <-time.After(w.WebhookEvery/2 + rand.N(w.WebhookEvery)):
		}
	}
}

// waitWebhook polls every node's GET /admin/webhooks until each lists
// receiver name (a node knows it once it applied the catalog entry), or
// timeout.
func (c *Client) waitWebhook(ctx context.Context, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for n := 1; n <= len(c.Nodes); {
		ok, err := c.listsWebhook(ctx, n, name)
		if ok {
			n++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d does not list it after %s: %v", n, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func (c *Client) listsWebhook(ctx context.Context, n int, name string) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, c.Attempt)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, c.Nodes[n-1]+"/api/harvest/admin/webhooks", nil)
	if err != nil {
		return false, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return strings.Contains(string(b), `"name":"`+name+`"`), nil
}
