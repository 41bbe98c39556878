package engine

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
	"github.com/harvestd/harvest/engine/internal/store"
)

// Completion callback delivery: at least once, retried with backoff, every
// attempt of one callback carrying the same Idempotency-Key header.
const (
	callbackBatch       = 16
	callbackTimeout     = 10 * time.Second
	callbackClaim       = time.Minute // an attempt's lock; a crash retries after it
	callbackMaxAttempts = 12
)

// CallbackKey is the Idempotency-Key header of every delivery attempt of
// callback idx of a run.
func CallbackKey(executionID uuid.UUID, idx int) string {
	return fmt.Sprintf("hvcb_%s_%d", executionID, idx)
}

// callbackClient dials only addresses the policy permits (checked on the
// connected address: DNS rebinding cannot slip through) and never follows
// redirects.
func callbackClient(p CallbackPolicy) *http.Client {
	dialer := &net.Dialer{Timeout: callbackTimeout, Control: p.dialControl}
	t := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second,
		TLSHandshakeTimeout: callbackTimeout, ResponseHeaderTimeout: callbackTimeout}
	return &http.Client{Transport: t, Timeout: callbackTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// callbackLoop delivers due callbacks until ctx ends.
func (e *Engine) callbackLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.PollInterval)
	defer t.Stop()
	for {
		for {
			n, err := e.deliverCallbacks(ctx)
			if err != nil && ctx.Err() == nil {
				e.log.Warn().Err(err).Msg("callback delivery failed")
			}
			if err != nil || n < callbackBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-e.cbWake:
		case <-t.C:
		}
	}
}

func (e *Engine) deliverCallbacks(ctx context.Context) (int, error) {
	due, err := e.claimCallbacks(ctx)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	for _, cb := range due {
		deliveryErr := e.deliver(ctx, cb)
		if ctx.Err() != nil {
			return len(due), nil
		}
		if err := e.recordDelivery(ctx, cb, deliveryErr); err != nil {
			return len(due), err
		}
	}
	return len(due), nil
}

// claimCallbacks takes due callbacks for one attempt each.
func (e *Engine) claimCallbacks(ctx context.Context) ([]store.DueCallback, error) {
	var out []store.DueCallback
	err := e.withTx(ctx, func(tx *fence.Tx) error {
		var err error
		if out, err = store.ClaimCallbacks(ctx, tx, callbackBatch, callbackClaim); err != nil {
			return fmt.Errorf("claim callbacks: %w", err)
		}
		return nil
	})
	return out, err
}

// deliver POSTs the run's result to the callback URL once.
func (e *Engine) deliver(ctx context.Context, cb store.DueCallback) error {
	x, err := e.GetExecution(ctx, cb.ExecutionID)
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
	res, err := e.cbHTTP.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("callback answered HTTP %d", res.StatusCode)
	}
	return nil
}

// recordDelivery marks a callback delivered, or schedules its retry, or
// gives up after callbackMaxAttempts.
func (e *Engine) recordDelivery(ctx context.Context, cb store.DueCallback, deliveryErr error) error {
	return e.withTx(ctx, func(tx *fence.Tx) error {
		if deliveryErr == nil {
			return store.CallbackDelivered(ctx, tx, cb.ExecutionID, cb.Idx)
		}
		status := "due"
		if cb.Attempt >= callbackMaxAttempts {
			status = "failed"
			e.log.Warn().Str("execution_id", cb.ExecutionID.String()).Int("attempt", cb.Attempt).Err(deliveryErr).Msg("callback given up")
		}
		delay := harvest.RetryPolicy{InitialInterval: time.Second, MaxInterval: 5 * time.Minute}.Backoff(cb.Attempt)
		return store.CallbackFailed(ctx, tx, cb.ExecutionID, cb.Idx, status, deliveryErr.Error(), delay)
	})
}
