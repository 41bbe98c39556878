package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"time"
)

// RetryPolicy bounds the client's retries. A request is retried when:
//   - the server shed it: 429 rate_limited or 503 overloaded, answered
//     before any work, so every request is retried, a token creation
//     included, after the server's Retry-After;
//   - the server answered 503 (unavailable: the shard is moving, the node
//     is starting), which it sends before doing anything — except 503
//     admission_blocked (ErrGated), which lasts until an operator acts;
//   - the connection could not be made (nothing was sent);
//   - for a request that is safe to replay only — a GET, a request with an
//     idempotency key, a terminate — any other transport error (the answer
//     was lost) or a 502 or 504 of a proxy.
//
// Every attempt resends the same bytes and the same Idempotency-Key, so a
// keyed start or signal that reached the server before its answer was lost
// is deduplicated by the retry. A keyless start or signal is not retried
// after its request may have been sent: it could run twice. A token
// creation is not retried at all once it may have been sent, 503
// included (see CreateToken).
type RetryPolicy struct {
	// MaxAttempts bounds the attempts, the first included; 1 disables
	// retries.
	MaxAttempts int
	// MaxElapsed bounds the time from the first attempt to the start of
	// the last: a retry whose wait would end later is not made.
	MaxElapsed time.Duration
	// InitialBackoff is the wait before the first retry; each further wait
	// doubles, up to MaxBackoff, with up to 20% jitter. A longer
	// Retry-After of the server is honoured instead.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
}

// DefaultRetryPolicy is the policy of New: four attempts within 15 s.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, MaxElapsed: 15 * time.Second, InitialBackoff: 100 * time.Millisecond,
	MaxBackoff: 2 * time.Second}

// WithRetryPolicy sets the retry policy; zero fields keep the values of
// DefaultRetryPolicy.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *Client) {
		d := DefaultRetryPolicy
		if p.MaxAttempts > 0 {
			d.MaxAttempts = p.MaxAttempts
		}
		if p.MaxElapsed > 0 {
			d.MaxElapsed = p.MaxElapsed
		}
		if p.InitialBackoff > 0 {
			d.InitialBackoff = p.InitialBackoff
		}
		if p.MaxBackoff > 0 {
			d.MaxBackoff = p.MaxBackoff
		}
		c.retry = d
	}
}

// WithoutRetries makes every request a single attempt.
func WithoutRetries() Option {
	return func(c *Client) { c.retry.MaxAttempts = 1 }
}

// send runs cl, retrying as c's policy allows. The error is the last
// attempt's, unwrapped.
func (c *Client) send(ctx context.Context, cl call) (*reply, error) {
	p := c.retry
	start := time.Now()
	backoff := p.InitialBackoff
	for attempt := 1; ; attempt++ {
		rep, err := c.attempt(ctx, cl)
		if err == nil || attempt >= p.MaxAttempts || ctx.Err() != nil || !retryable(cl, err) {
			return rep, err
		}
		wait := jitter(backoff)
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.RetryAfter > wait {
			wait = apiErr.RetryAfter
		}
		if time.Since(start)+wait > p.MaxElapsed {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}

// retryable reports whether err, the failure of one attempt of cl, may be
// retried (see RetryPolicy).
func retryable(cl call, err error) bool {
	var apiErr *Error
	if errors.As(err, &apiErr) && shed(apiErr) {
		return true
	}
	if errors.As(err, &apiErr) && cl.once {
		return false
	}
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.Code == CodeGated:
			return false
		case apiErr.Status == http.StatusServiceUnavailable:
			return true
		case apiErr.Status == http.StatusBadGateway, apiErr.Status == http.StatusGatewayTimeout:
			return cl.replaySafe()
		}
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true // nothing was sent
	}
	return cl.replaySafe()
}

// shed reports whether the server refused the request before any work
// to shed load.
func shed(e *Error) bool {
	return e.Status == http.StatusTooManyRequests && e.Code != CodeThrottled || e.Status == http.StatusServiceUnavailable && e.Code == CodeOverloaded
}

// replaySafe reports whether sending cl twice has the effect of sending it
// once.
func (cl call) replaySafe() bool {
	return cl.method == http.MethodGet || cl.method == http.MethodHead || cl.key != "" || cl.idempotent
}

// jitter adds up to 20% to d.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + rand.N(d/5+1)
}
