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
	"strings"
	"sync"
	"time"
)

// Webhook deliveries: the webhook part of the workload.
//
// The workload creates one generic HMAC receiver (webhookName: action
// start of noop_chain, the delivery id at /id, signed in
// webhookSignatureHeader), waits until every node knows it, then
// delivers signed events through random nodes until the load ends: each
// delivery is retried on transport errors, 5xx and 429, as a provider
// retries, and delivered again (the same id and body) through a random
// node once or twice after its answer, as a provider redelivers. The
// checker (checker_webhook.go) counts the runs per delivery id.

// Operation kinds of the webhook part.
const (
	KindWebhookCreate = "webhook_create" // create the receiver (idempotent: the same config again answers 201)
	KindWebhook       = "webhook"        // deliver an event (its delivery id is the op's key)
)

// The receiver the workload creates.
const (
	webhookName            = "chaos"
	webhookSecret          = "chaos-webhook-secret"
	webhookSignatureHeader = "X-Chaos-Signature"
	webhookKeyPrefix       = "hv:webhook:" + webhookName + ":"
)

// isWebhookOp reports whether op is of the webhook part.
func isWebhookOp(op *Op) bool { return op.Kind == KindWebhookCreate || op.Kind == KindWebhook }

// webhookPayload is the event delivery id carries: the run's input.
func webhookPayload(id string) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "activities": 1})
	return b
}

// webhookSignature is the hex HMAC-SHA256 of body under the receiver's
// secret.
func webhookSignature(body []byte) string {
	m := hmac.New(sha256.New, []byte(webhookSecret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// webhookRequest is the request of a webhook op.
func webhookRequest(op *Op) request {
	if op.Kind == KindWebhookCreate {
		return request{http.MethodPost, "/api/harvest/admin/webhooks", "", map[string]any{
			"name": webhookName, "provider": "generic", "secret": webhookSecret, "action": "start", "workflow": op.Workflow,
			"key_pointer": "/id", "signature_header": webhookSignatureHeader}}
	}
	// The client signs the bytes it sends (Client.attempt).
	return request{http.MethodPost, "/api/harvest/webhooks/" + webhookName, "", json.RawMessage(webhookPayload(op.Key))}
}

// runWebhooks creates the receiver and delivers events until ctx ends.
func (w *Workload) runWebhooks(ctx context.Context) {
	if w.WebhookEvery <= 0 {
		return
	}
	create := &Op{Kind: KindWebhookCreate, Workflow: wfChild, Key: webhookName}
	for ctx.Err() == nil {
		op := *create
		octx, cancel := context.WithTimeout(ctx, w.OpTimeout)
		res := w.Client.Do(octx, &op, 0)
		cancel()
		if res.OK {
			break
		}
		if res.Status/100 == 4 && res.Status != http.StatusTooManyRequests {
			w.bug("webhook receiver create refused %d: %s", res.Status, res.Err)
			return
		}
	}
	if err := w.Client.waitWebhook(ctx, time.Minute); err != nil {
		if ctx.Err() == nil {
			w.bug("webhook receiver %q: %v", webhookName, err)
		}
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		id := fmt.Sprintf("evt-%d", w.seq.Add(1))
		ops := []*Op{{Kind: KindWebhook, Workflow: wfChild, Key: id}}
		for range 1 + rand.IntN(2) {
			ops = append(ops, &Op{Kind: KindWebhook, Workflow: wfChild, Key: id, Dup: true})
		}
		wg.Go(func() { w.runChain(ctx, chain{ops: ops}, w.OpTimeout, false) })
		select {
		case <-ctx.Done():
		case <-time.After(w.WebhookEvery/2 + rand.N(w.WebhookEvery)):
		}
	}
}

// waitWebhook polls every node's GET /admin/webhooks until each lists
// the receiver (a node knows it once it applied the catalog entry), or
// timeout.
func (c *Client) waitWebhook(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for n := 1; n <= len(c.Nodes); {
		ok, err := c.listsWebhook(ctx, n)
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

func (c *Client) listsWebhook(ctx context.Context, n int) (bool, error) {
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
	return strings.Contains(string(b), `"name":"`+webhookName+`"`), nil
}
