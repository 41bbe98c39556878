package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors: classes of *Error, matched with errors.Is. An *Error
// matches by its code when the server sent a known one, else by its HTTP
// status (for answers of proxies that know no codes).
var (
	// ErrNotFound: no such execution (not_found) or workflow name
	// (unknown_workflow); HTTP 404.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the reuse/conflict policy refused a start or
	// signal-with-start (conflict); HTTP 409.
	ErrConflict = errors.New("conflict")
	// ErrTerminal: a signal (new key or none) or cancel hit a closed run
	// (execution_terminal).
	ErrTerminal = errors.New("execution terminal")
	// ErrInvalid: the request is malformed (invalid_json,
	// invalid_argument, forged_header: an X-Harvest-* header sent by a
	// client); HTTP 400.
	ErrInvalid = errors.New("invalid request")
	// ErrUnavailable: the shard is not served right now (unavailable);
	// HTTP 502, 503 or 504. Safe to retry with the same idempotency key.
	ErrUnavailable = errors.New("unavailable")
	// ErrTooLarge: the request body exceeds the server's limit
	// (payload_too_large); HTTP 413.
	ErrTooLarge = errors.New("payload too large")
	// ErrUnsafeDrain: the server refused a drain that could lose
	// deduplication or stop all placement (unsafe_drain, HTTP 409); the
	// message says why. DrainShard with force overrides it.
	ErrUnsafeDrain = errors.New("unsafe drain")
	// ErrShardUnreachable: the leader cannot connect to or migrate the
	// database of a shard being added (shard_unreachable, HTTP 422).
	ErrShardUnreachable = errors.New("shard database unreachable")
	// ErrGated: an admission gate covers this fresh start
	// (admission_blocked, HTTP 503); the body names gate_id and reason.
	// Unlike ErrUnavailable it is not retried: a gate lasts until an
	// operator lifts it or it expires.
	ErrGated = errors.New("admission blocked")
	// ErrInvalidInput: the input fails the workflow's JSON Schema
	// (invalid_input, HTTP 422); Error.Violations lists why.
	ErrInvalidInput = errors.New("invalid input")
	// ErrUnknownSignal: the run's workflow declares its signals and not
	// this one (unknown_signal, HTTP 404); nothing was delivered.
	ErrUnknownSignal = errors.New("unknown signal")
	// ErrUnknownQuery: the workflow code registered no query handler
	// under this name (unknown_query, HTTP 404).
	ErrUnknownQuery = errors.New("unknown query")
	// ErrQueryCommand: the query handler issued a workflow command
	// (query_command, HTTP 400).
	ErrQueryCommand = errors.New("query handler issued a command")
	// ErrQueryTimeout: the query ran past the engine's bound
	// (query_timeout, HTTP 408).
	ErrQueryTimeout = errors.New("query timed out")
	// ErrInvalidPayload: the signal payload does not decode into the type
	// of the signal the workflow declares (invalid_payload, HTTP 422);
	// nothing was delivered.
	ErrInvalidPayload = errors.New("invalid signal payload")
	// ErrCallbackRefused: a completion callback URL is not http(s) or
	// reaches a blocked address (callback_refused, HTTP 422); the body
	// names the url.
	ErrCallbackRefused = errors.New("callback refused")
	// ErrUnauthenticated: the node takes bearer tokens and the request
	// carried none, or one that is malformed, unknown, revoked or expired
	// (unauthenticated, HTTP 401). WithToken sets the token. Not retried.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: the token's scope is below what the route needs, or a
	// start's policy would terminate a running run and the token is not
	// of scope admin (forbidden, HTTP 403); the message names the scope.
	// Not retried.
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited: the token is over the node's per-token rate
	// (rate_limited, HTTP 429), refused before any work; retried after
	// the server's Retry-After.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnknownUpdate: the run's code registered no handler under this
	// update name (unknown_update, HTTP 404); nothing was recorded.
	ErrUnknownUpdate = errors.New("unknown update")
	// ErrUpdateRejected: the run's validator refused the update
	// (update_rejected, HTTP 422); nothing was recorded.
	ErrUpdateRejected = errors.New("update rejected")
	// ErrUpdatePending: an update was accepted but its handler did not
	// answer within the wait. Ask again with the same update id.
	ErrUpdatePending = errors.New("update accepted, not answered yet")
)

// Error codes of the server's error body (docs/http-api.md).
const (
	CodeInvalidJSON     = "invalid_json"
	CodeInvalidArgument = "invalid_argument"
	CodeUnknownWorkflow = "unknown_workflow"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	CodeTerminal        = "execution_terminal"
	CodeForbidden       = "forbidden"
	// CodeUnauthenticated answers a missing or refused bearer token.
	CodeUnauthenticated = "unauthenticated"
	// CodeForgedHeader answers a request carrying an X-Harvest-* header,
	// which only nodes send to each other.
	CodeForgedHeader = "forged_header"
	CodeTooLarge     = "payload_too_large"
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal"
	// CodeRateLimited (429) and CodeOverloaded (503: the node's in-flight
	// limit) shed load before any work; both are retried.
	CodeRateLimited = "rate_limited"
	CodeOverloaded  = "overloaded"
	// CodeThrottled (429 with Retry-After) refuses a throttled deferred
	// start past its key's backlog; it is not retried (the wait may be
	// long): the caller decides.
	CodeThrottled = "throttled"
	// CodeUnsafeDrain and CodeShardUnreachable answer the shard catalog
	// admin routes.
	CodeUnsafeDrain      = "unsafe_drain"
	CodeShardUnreachable = "shard_unreachable"
	// CodeGated, CodeInvalidInput and CodeCallbackRefused answer fresh
	// starts.
	CodeGated           = "admission_blocked"
	CodeInvalidInput    = "invalid_input"
	CodeCallbackRefused = "callback_refused"
	// CodeUnknownSignal and CodeInvalidPayload answer signals and
	// signal-with-start to a workflow that declares its signals.
	CodeUnknownSignal  = "unknown_signal"
	CodeInvalidPayload = "invalid_payload"
	// CodeUnknownQuery, CodeQueryCommand and CodeQueryTimeout answer
	// queries.
	CodeUnknownQuery = "unknown_query"
	CodeQueryCommand = "query_command"
	CodeQueryTimeout = "query_timeout"
	// CodeUnknownUpdate and CodeUpdateRejected answer updates.
	CodeUnknownUpdate  = "unknown_update"
	CodeUpdateRejected = "update_rejected"
)

// codeClass maps known codes to their sentinel; a nil value is a known code
// with no sentinel.
var codeClass = map[string]error{
	CodeInvalidJSON:      ErrInvalid,
	CodeInvalidArgument:  ErrInvalid,
	CodeUnknownWorkflow:  ErrNotFound,
	CodeNotFound:         ErrNotFound,
	CodeConflict:         ErrConflict,
	CodeTerminal:         ErrTerminal,
	CodeForbidden:        ErrForbidden,
	CodeUnauthenticated:  ErrUnauthenticated,
	CodeForgedHeader:     ErrInvalid,
	CodeTooLarge:         ErrTooLarge,
	CodeUnavailable:      ErrUnavailable,
	CodeInternal:         nil,
	CodeRateLimited:      ErrRateLimited,
	CodeOverloaded:       ErrUnavailable,
	CodeUnsafeDrain:      ErrUnsafeDrain,
	CodeShardUnreachable: ErrShardUnreachable,
	CodeGated:            ErrGated,
	CodeInvalidInput:     ErrInvalidInput,
	CodeCallbackRefused:  ErrCallbackRefused,
	CodeUnknownSignal:    ErrUnknownSignal,
	CodeInvalidPayload:   ErrInvalidPayload,
	CodeUnknownQuery:     ErrUnknownQuery,
	CodeQueryCommand:     ErrQueryCommand,
	CodeQueryTimeout:     ErrQueryTimeout,
	CodeUnknownUpdate:    ErrUnknownUpdate,
	CodeUpdateRejected:   ErrUpdateRejected,
}

// statusClass classifies answers without a known code.
var statusClass = map[int]error{
	http.StatusBadRequest:            ErrInvalid,
	http.StatusUnauthorized:          ErrUnauthenticated,
	http.StatusForbidden:             ErrForbidden,
	http.StatusNotFound:              ErrNotFound,
	http.StatusConflict:              ErrConflict,
	http.StatusRequestEntityTooLarge: ErrTooLarge,
	http.StatusTooManyRequests:       ErrRateLimited,
	http.StatusBadGateway:            ErrUnavailable,
	http.StatusServiceUnavailable:    ErrUnavailable,
	http.StatusGatewayTimeout:        ErrUnavailable,
}

// Error is a non-2xx answer of the server.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the body's machine code ("not_found", …); empty when the
	// body was not the JSON error shape.
	Code string
	// Message is the body's human "error" message, else the body text or
	// the status text.
	Message string
	// Body is the whole decoded JSON body, including extra facts such as
	// existing_execution_id or state; nil when the body was not JSON.
	Body map[string]any
	// RetryAfter is the server's Retry-After header (seconds or an HTTP
	// date) as a duration from when the answer arrived; 0 when absent.
	RetryAfter time.Duration
}

// Error formats as "<message> (<code>, HTTP <status>)".
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// Is matches the sentinel of e's code, or of its status when the code is
// empty or unknown.
func (e *Error) Is(target error) bool {
	if class, known := codeClass[e.Code]; known {
		return class != nil && class == target
	}
	class := statusClass[e.Status]
	return class != nil && class == target
}

// Field returns a string field of the error body (e.g.
// "existing_execution_id"), or "".
func (e *Error) Field(name string) string {
	s, _ := e.Body[name].(string)
	return s
}

// Violation is one way an input fails the workflow's schema.
type Violation struct {
	// Path is a JSON pointer into the input ("" is the whole input).
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Violations returns the schema violations of an invalid_input answer;
// nil for other answers.
func (e *Error) Violations() []Violation {
	list, _ := e.Body["violations"].([]any)
	var out []Violation
	for _, item := range list {
		m, _ := item.(map[string]any)
		path, _ := m["path"].(string)
		msg, _ := m["message"].(string)
		out = append(out, Violation{Path: path, Message: msg})
	}
	return out
}

// errorTextMax bounds Message when the body is not JSON (an HTML page of a
// proxy, say).
const errorTextMax = 512

// decodeError builds the *Error of a non-2xx answer.
func decodeError(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyMax))
	raw = bytes.TrimSpace(raw)
	if json.Unmarshal(raw, &e.Body) == nil && e.Body != nil {
		e.Code, _ = e.Body["code"].(string)
		e.Message, _ = e.Body["error"].(string)
	} else if len(raw) > 0 {
		e.Message = string(raw[:min(len(raw), errorTextMax)])
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP
// date. Absent, malformed and past values are 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(time.Hour/time.Second))) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
