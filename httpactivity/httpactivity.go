// Package httpactivity describes the HTTP activities an admin registers
// at run time (POST /api/harvest/admin/activities): a name workflows
// call (harvest.RemoteActivity) and the URL every attempt is POSTed to,
// with its headers, its per-attempt timeout and its retry policy.
//
// A cluster keeps the registrations in its raft catalog, a dev node in
// its shard database. The engine reads one only when it runs an attempt
// of an activity its Go registry lacks, never during replay.
//
// Header values are credentials for the downstream (an Authorization,
// say): a Config is redacted (Redacted) before it is shown, and never
// logged.
package httpactivity

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits.
const (
	// MaxTimeout bounds Config.Timeout (harvest.DefaultStartToClose: a
	// workflow that sets no start-to-close gets the whole of it).
	MaxTimeout = 10 * time.Minute
	// MaxAttempts bounds Retry.MaxAttempts: a registration's retries are
	// always bounded.
	MaxAttempts = 100
	// MaxInterval bounds Retry.InitialInterval and Retry.MaxInterval.
	MaxInterval = time.Hour
	// MaxBackoffCoefficient bounds Retry.BackoffCoefficient.
	MaxBackoffCoefficient = 10.0
	// MaxHeaders bounds the number of Config.Headers.
	MaxHeaders = 32
	// RedactedValue stands for a header value in every answer that shows
	// a Config.
	RedactedValue = "[redacted]"

	maxNameLen        = 256
	maxURLLen         = 2048
	maxHeaderValueLen = 4096
	maxErrorTypes     = 32
)

// Sentinel errors of the package.
var (
	// ErrInvalidConfig: a Config field is missing or out of range.
	ErrInvalidConfig = errors.New("invalid http activity")
	// ErrExists: an activity of that name is registered with another
	// config.
	ErrExists = errors.New("an http activity of that name exists")
	// ErrUnknown: no activity of that name is registered.
	ErrUnknown = errors.New("unknown http activity")
)

// Retry is a registration's retry policy; zero fields take the
// defaults of harvest.RetryPolicy.
type Retry struct {
	// MaxAttempts counts the first try; 0 is the default (3), else 1 to
	// MaxAttempts.
	MaxAttempts        int           `json:"max_attempts,omitempty"`
	InitialInterval    time.Duration `json:"initial_interval,omitempty"`
	BackoffCoefficient float64       `json:"backoff_coefficient,omitempty"`
	MaxInterval        time.Duration `json:"max_interval,omitempty"`
	// NonRetryableErrors lists error types that end retries at once
	// ("http_400" is already final; "http_503" would make it so).
	NonRetryableErrors []string `json:"non_retryable_errors,omitempty"`
}

// Config is one HTTP activity registered at run time.
type Config struct {
	// Name is the activity name workflows call; letters, digits, '.',
	// '_', ':' and '-', at most 256 bytes.
	Name string `json:"name"`
	// URL is POSTed every attempt: http or https, absolute, without
	// credentials. The engine's address rules (completion callbacks')
	// apply to it when it is registered and on every attempt.
	URL string `json:"url"`
	// Headers are sent on every attempt; they may not set Idempotency-Key,
	// Harvest-* or the headers the request itself owns (Content-Type,
	// Content-Length, Host, Connection, Transfer-Encoding).
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds each attempt (with the workflow's start-to-close,
	// the shorter wins); 0: the start-to-close alone.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Retry is the retry policy of a call whose workflow passed none; nil:
	// the default policy.
	Retry *Retry `json:"retry,omitempty"`
	// CreatedAt is when the activity was registered.
	CreatedAt time.Time `json:"created_at"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// ownedHeaders are set by every attempt's request itself.
var ownedHeaders = []string{"Idempotency-Key", "Content-Type", "Content-Length", "Host", "Connection", "Transfer-Encoding"}

// Validate reports the first field that is missing or out of range.
func (c Config) Validate() error {
	if c.Name == "" || len(c.Name) > maxNameLen || !nameRE.MatchString(c.Name) {
		return invalid("name must be 1 to %d letters, digits, '.', '_', ':' or '-'", maxNameLen)
	}
	if err := checkURL(c.URL); err != nil {
		return err
	}
	if err := checkHeaders(c.Headers); err != nil {
		return err
	}
	if c.Timeout < 0 || c.Timeout > MaxTimeout {
		return invalid("timeout must be between 0 (the attempt's start-to-close) and %s", MaxTimeout)
	}
	if c.Retry != nil {
		return c.Retry.validate()
	}
	return nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "" || len(raw) > maxURLLen:
		return invalid("url must be 1 to %d bytes", maxURLLen)
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return invalid("url must be an absolute http or https URL")
	case u.User != nil:
		return invalid("url may not carry credentials (use headers)")
	case u.Fragment != "":
		return invalid("url may not have a fragment")
	}
	return nil
}

func checkHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return invalid("at most %d headers", MaxHeaders)
	}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		canon := http.CanonicalHeaderKey(k)
		switch {
		case !validHeaderName(k):
			return invalid("header name %q is not a valid HTTP header name", k)
		case slices.Contains(ownedHeaders, canon) || strings.HasPrefix(canon, "Harvest-"):
			return invalid("header %s is set by harvest on every attempt (Idempotency-Key, Harvest-* and the request's own headers are reserved)", canon)
		case len(h[k]) > maxHeaderValueLen || strings.ContainsFunc(h[k], badValueRune):
			return invalid("the value of header %s must be at most %d bytes without control characters", canon, maxHeaderValueLen)
		}
	}
	return nil
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

func badValueRune(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f || r == utf8.RuneError }

func (r Retry) validate() error {
	switch {
	case r.MaxAttempts < 0 || r.MaxAttempts > MaxAttempts:
		return invalid("retry.max_attempts must be between 0 (the default, 3) and %d", MaxAttempts)
	case r.InitialInterval < 0 || r.InitialInterval > MaxInterval || r.MaxInterval < 0 || r.MaxInterval > MaxInterval:
		return invalid("retry intervals must be between 0 (the default) and %s", MaxInterval)
	case r.BackoffCoefficient != 0 && (r.BackoffCoefficient < 1 || r.BackoffCoefficient > MaxBackoffCoefficient):
		return invalid("retry.backoff_coefficient must be 0 (the default, 2) or between 1 and %g", MaxBackoffCoefficient)
	case len(r.NonRetryableErrors) > maxErrorTypes:
		return invalid("at most %d retry.non_retryable_errors", maxErrorTypes)
	}
	for _, t := range r.NonRetryableErrors {
		if t == "" || len(t) > maxNameLen || strings.ContainsFunc(t, badValueRune) {
			return invalid("retry.non_retryable_errors must be error types of 1 to %d bytes", maxNameLen)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalidConfig)
}

// Redacted returns c with every header value replaced by RedactedValue.
func (c Config) Redacted() Config {
	c = c.Clone()
	for k := range c.Headers {
		c.Headers[k] = RedactedValue
	}
	return c
}

// Clone returns a deep copy of c.
func (c Config) Clone() Config {
	c.Headers = maps.Clone(c.Headers)
	if c.Retry != nil {
		r := *c.Retry
		r.NonRetryableErrors = slices.Clone(r.NonRetryableErrors)
		c.Retry = &r
	}
	return c
}

// Same reports whether c and o register the same activity (CreatedAt
// aside): registering one again changes nothing.
func (c Config) Same(o Config) bool {
	if c.Name != o.Name || c.URL != o.URL || c.Timeout != o.Timeout || len(c.Headers) != len(o.Headers) ||
		!maps.Equal(c.Headers, o.Headers) || (c.Retry == nil) != (o.Retry == nil) {
		return false
	}
	if c.Retry == nil {
		return true
	}
	a, b := *c.Retry, *o.Retry
	return a.MaxAttempts == b.MaxAttempts && a.InitialInterval == b.InitialInterval &&
		a.BackoffCoefficient == b.BackoffCoefficient && a.MaxInterval == b.MaxInterval &&
		slices.Equal(a.NonRetryableErrors, b.NonRetryableErrors)
}
