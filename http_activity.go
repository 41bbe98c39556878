package harvest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HTTP activities: an activity whose body is a POST to a URL.
//
// Each attempt POSTs the activity's input as JSON with the headers
// Idempotency-Key (the activity's stable key, the same on every attempt,
// after a crash too), Harvest-Attempt and Harvest-Execution-Id, so any
// downstream that deduplicates by Idempotency-Key (Stripe, a team's own
// service in any language) makes the effect exactly once. The answer:
//
//   - 2xx completes the activity with the JSON body as its output; an empty
//     body is the output null; a body that is not JSON fails it for good.
//   - 408, 409 (Stripe's answer while a request with the same key is still
//     in flight) and 429 are retried, after Retry-After when the answer has
//     one; so are 5xx answers, transport errors and timeouts.
//   - Any other status (3xx included: redirects are not followed) fails
//     the activity for good, as an ApplicationError of type "http_<status>".
//   - An answer over MaxAnswerBytes fails it for good.
//
// The engine makes the request: the URL and every address dialled pass the
// rules of completion callbacks (no loopback, private, link-local or
// metadata address unless --callback-allow-cidr allows it).

// DefaultMaxAnswerBytes caps an HTTP activity's answer (1 MiB).
const DefaultMaxAnswerBytes = 1 << 20

// maxRetryAfter caps the pause an answer's Retry-After asks for.
const maxRetryAfter = 10 * time.Minute

// HTTPActivityOptions configure an HTTP activity.
type HTTPActivityOptions struct {
	// Headers are sent on every attempt (an Authorization for the
	// downstream, say); they are never logged or recorded in history.
	// They cannot replace the Harvest-* headers or Idempotency-Key.
	Headers map[string]string
	// MaxAnswerBytes caps the answer's body; 0 is DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// Async sends each attempt's task token (ActivityContext.TaskToken) in
	// the Harvest-Task-Token header and takes a 202 answer for "I will
	// finish later" (ErrResultPending): the downstream then completes,
	// fails or heartbeats the attempt with the token. Without Async a 202
	// is a 2xx like any other.
	Async bool
	// Activity holds the activity's timeouts and retry policy.
	Activity ActivityOptions
}

// TaskTokenHeader carries an attempt's task token (HTTP activities with
// Async, and the async completion routes).
const TaskTokenHeader = "Harvest-Task-Token"

// OutboundHTTP is how an engine lets activities reach other services:
// CheckURL refuses a URL the engine's address rules refuse, Do sends a
// request on a client that re-checks every address it dials and follows
// no redirect.
type OutboundHTTP interface {
	CheckURL(ctx context.Context, rawURL string) error
	Do(req *http.Request) (*http.Response, error)
}

// WithOutbound returns c with the engine's outbound HTTP (engines call it).
func (c *ActivityContext) WithOutbound(o OutboundHTTP) *ActivityContext {
	c.outbound = o
	return c
}

// NewHTTPActivity declares an activity that POSTs its input to url (see
// above). Register it like any activity and Execute it from workflows.
func NewHTTPActivity[In, Out any](name, url string, opts HTTPActivityOptions) *Activity[In, Out] {
	return NewActivity(name, func(ctx *ActivityContext, in In) (Out, error) {
		var out Out
		raw, err := callHTTP(ctx, url, opts, in)
		if err != nil {
			return out, err
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return out, NewNonRetryableError("http_invalid_answer", fmt.Sprintf("answer of %s does not decode: %v", url, err))
		}
		return out, nil
	}, opts.Activity)
}

// callHTTP makes one attempt's request and returns the answer's JSON.
func callHTTP(ctx *ActivityContext, url string, opts HTTPActivityOptions, in any) (json.RawMessage, error) {
	if ctx.outbound == nil {
		return nil, NewNonRetryableError("http_unavailable", "HTTP activities run under an engine (no outbound HTTP here)")
	}
	if err := ctx.outbound.CheckURL(ctx, url); err != nil {
		return nil, NewNonRetryableError("url_refused", err.Error())
	}
	req, err := httpActivityRequest(ctx, url, opts, in)
	if err != nil {
		return nil, err
	}
	if opts.Async {
		tok, err := ctx.TaskToken()
		if err != nil {
			return nil, err
		}
		req.Header.Set(TaskTokenHeader, tok)
	}
	res, err := ctx.outbound.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, NewApplicationError("http_transport", fmt.Sprintf("POST %s: %v", url, err))
	}
	defer res.Body.Close()
	if opts.Async && res.StatusCode == http.StatusAccepted {
		return nil, ErrResultPending
	}
	return httpAnswer(res, url, positiveOr(opts.MaxAnswerBytes, DefaultMaxAnswerBytes))
}

// httpActivityRequest is the attempt's POST.
func httpActivityRequest(ctx *ActivityContext, url string, opts HTTPActivityOptions, in any) (*http.Request, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, NewNonRetryableError("invalid_input", fmt.Sprintf("encode input for %s: %v", url, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, NewNonRetryableError("url_refused", fmt.Sprintf("bad URL %q: %v", url, err))
	}
	for k, v := range opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Del(TaskTokenHeader)
	info := ctx.Info()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", info.IdempotencyKey.String())
	req.Header.Set("Harvest-Attempt", strconv.Itoa(info.Attempt))
	req.Header.Set("Harvest-Execution-Id", info.ExecutionID)
	return req, nil
}

// httpAnswer maps an answer to the activity's output or error.
func httpAnswer(res *http.Response, url string, limit int64) (json.RawMessage, error) {
	body, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, NewApplicationError("http_transport", fmt.Sprintf("read answer of %s: %v", url, err))
	}
	if int64(len(body)) > limit {
		return nil, NewNonRetryableError("http_answer_too_large", fmt.Sprintf("answer of %s exceeds %d bytes", url, limit))
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return successBody(body, url)
	}
	return nil, statusError(res, body, url)
}

func successBody(body []byte, url string) (json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(body) {
		return nil, NewNonRetryableError("http_invalid_answer", fmt.Sprintf("answer of %s is not JSON", url))
	}
	return body, nil
}

// statusError is a non-2xx answer as an ApplicationError.
func statusError(res *http.Response, body []byte, url string) error {
	e := &ApplicationError{Type: fmt.Sprintf("http_%d", res.StatusCode),
		Message:      fmt.Sprintf("POST %s answered %s: %s", url, res.Status, snippet(body)),
		NonRetryable: !retryableStatus(res.StatusCode), NextRetryDelay: retryAfter(res.Header.Get("Retry-After"), time.Now())}
	if json.Valid(body) && len(bytes.TrimSpace(body)) > 0 {
		e.Details = body
	}
	return e
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), capped
// at maxRetryAfter; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(secs, 0), int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// snippet is the start of an answer body for an error message.
func snippet(body []byte) string {
	const n = 256
	s := strings.ToValidUTF8(string(bytes.TrimSpace(body)), "?")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func positiveOr(a, b int64) int64 {
	if a > 0 {
		return a
	}
	return b
}
