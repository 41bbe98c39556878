package maint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/ssrf"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Completion callback delivery: at least once, retried with backoff, every
// attempt of one callback carrying the same Idempotency-Key header.
const (
	callbackBatch       = 16
	callbackClaim       = time.Minute // an attempt's lock; a crash retries after it
	callbackMaxAttempts = 12
)

// CallbackKey is the Idempotency-Key header of every delivery attempt of
// callback idx of a run.
func CallbackKey(executionID uuid.UUID, idx int) string {
	return fmt.Sprintf("hvcb_%s_%d", executionID, idx)
}

// Callbacks delivers due completion callbacks: it claims a few for one
// attempt each, POSTs the run's result to each URL (through an HTTP
// client that dials only what the policy permits and never follows
// redirects) and records the delivery, or the retry, or gives up after
// callbackMaxAttempts.
type Callbacks struct {
	d    Deps
	wake chan struct{}
	http *http.Client
	// describe reads a closed run's result (the engine's read path).
	describe func(ctx context.Context, id uuid.UUID) (shardapi.Execution, error)
}

// NewCallbacks makes the callback loop, woken by wake; describe reads the
// result a callback carries.
func NewCallbacks(d Deps, wake chan struct{}, policy ssrf.Policy, describe func(context.Context, uuid.UUID) (shardapi.Execution, error)) *Callbacks {
	return &Callbacks{d: d, wake: wake, http: callbackClient(policy), describe: describe}
}

// callbackClient dials only addresses the policy permits (checked on the
// connected address: DNS rebinding cannot slip through) and never follows
// redirects.
func callbackClient(p ssrf.Policy) *http.Client {
	dialer := &net.Dialer{Timeout: ssrf.Timeout, Control: p.DialControl}
	t := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second,
		TLSHandshakeTimeout: ssrf.Timeout, ResponseHeaderTimeout: ssrf.Timeout}
	return &http.Client{Transport: t, Timeout: ssrf.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Run delivers due callbacks until ctx ends.
func (c *Callbacks) Run(ctx context.Context) {
	loop.Drain(ctx, c.wake, c.d.Poll, c.d.Log, func(ctx context.Context) (bool, error) {
		n, err := c.deliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			c.d.Log.Warn().Err(err).Msg("callback delivery failed")
		}
		return err == nil && n == callbackBatch, nil
	})
}

// deliverDue delivers one batch of due callbacks and returns its size.
func (c *Callbacks) deliverDue(ctx context.Context) (int, error) {
	due, err := c.claim(ctx)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	for _, cb := range due {
		deliveryErr := c.deliver(ctx, cb)
		if ctx.Err() != nil {
			return len(due), nil
		}
		if err := c.record(ctx, cb, deliveryErr); err != nil {
			return len(due), err
		}
	}
	return len(due), nil
}

// claim takes due callbacks for one attempt each.
func (c *Callbacks) claim(ctx context.Context) ([]store.DueCallback, error) {
	var out []store.DueCallback
	err := c.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		var err error
		if out, err = store.ClaimCallbacks(ctx, tx, callbackBatch, callbackClaim); err != nil {
			return fmt.Errorf("claim callbacks: %w", err)
		}
		return nil
	})
	return out, err
}

// deliver POSTs the run's result to the callback URL once.
func (c *Callbacks) deliver(ctx context.Context, cb store.DueCallback) error {
	x, err := c.describe(ctx, cb.ExecutionID)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{
		"execution_id": x.ExecutionID, "workflow_name": x.WorkflowName, "workflow_id": x.WorkflowID,
		"state": x.State, "output": x.Output, "error": x.Error, "completed_at": x.CompletedAt,
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cb.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range cb.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", CallbackKey(cb.ExecutionID, cb.Idx))
	req.Header.Set("X-Harvest-Execution-Id", cb.ExecutionID.String())
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("callback answered HTTP %d", res.StatusCode)
	}
	return nil
}

// record marks a callback delivered, or schedules its retry, or gives up
// after callbackMaxAttempts.
func (c *Callbacks) record(ctx context.Context, cb store.DueCallback, deliveryErr error) error {
	return c.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		if deliveryErr == nil {
			return store.CallbackDelivered(ctx, tx, cb.ExecutionID, cb.Idx)
		}
		status := "due"
		if cb.Attempt >= callbackMaxAttempts {
			status = "failed"
			c.d.Log.Warn().Str("execution_id", cb.ExecutionID.String()).Int("attempt", cb.Attempt).Err(deliveryErr).Msg("callback given up")
		}
		delay := harvest.RetryPolicy{InitialInterval: time.Second, MaxInterval: 5 * time.Minute}.Backoff(cb.Attempt)
		return store.CallbackFailed(ctx, tx, cb.ExecutionID, cb.Idx, status, deliveryErr.Error(), delay)
	})
}
