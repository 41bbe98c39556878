package harvest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Defaults of activity options and retry policies.
const (
	// DefaultMaxAttempts is the number of attempts of an activity without a
	// retry policy (the first try plus two retries).
	DefaultMaxAttempts = 3
	// DefaultInitialInterval is the delay before the first retry.
	DefaultInitialInterval = time.Second
	// DefaultBackoffCoefficient multiplies the delay after every retry.
	DefaultBackoffCoefficient = 2.0
	// DefaultMaxInterval caps the delay between retries.
	DefaultMaxInterval = 300 * time.Second
	// DefaultStartToClose bounds one attempt of an activity.
	DefaultStartToClose = 10 * time.Minute
	// DefaultQueue is the task queue of activities without one.
	DefaultQueue = "default"
)

// RetryPolicy decides whether and when a failed activity attempt is retried.
// Zero fields take the defaults above; MaxAttempts < 0 means unlimited.
type RetryPolicy struct {
	MaxAttempts        int
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaxInterval        time.Duration
	// NonRetryableErrors lists ApplicationError types (or Go error types,
	// as "%T" prints them) that end retries at once.
	NonRetryableErrors []string
}

// Exponential returns a policy of maxAttempts attempts whose delays start at
// initial and double up to DefaultMaxInterval.
func Exponential(maxAttempts int, initial time.Duration) *RetryPolicy {
	return &RetryPolicy{MaxAttempts: maxAttempts, InitialInterval: initial, BackoffCoefficient: 2}
}

// WithDefaults returns the policy with zero fields filled in.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.InitialInterval <= 0 {
		p.InitialInterval = DefaultInitialInterval
	}
	if p.BackoffCoefficient < 1 {
		p.BackoffCoefficient = DefaultBackoffCoefficient
	}
	if p.MaxInterval <= 0 {
		p.MaxInterval = DefaultMaxInterval
	}
	return p
}

// Backoff is the delay after the given failed attempt (1-based):
// initial × coefficient^(attempt−1), capped at MaxInterval.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	p = p.WithDefaults()
	if attempt < 1 {
		attempt = 1
	}
	d := float64(p.InitialInterval) * math.Pow(p.BackoffCoefficient, float64(attempt-1))
	if d > float64(p.MaxInterval) || math.IsInf(d, 0) || math.IsNaN(d) {
		return p.MaxInterval
	}
	return time.Duration(d)
}

// ShouldRetry reports whether a failure of the given attempt is retried.
func (p RetryPolicy) ShouldRetry(attempt int, info ErrorInfo) bool {
	p = p.WithDefaults()
	if info.NonRetryable || (info.Type != "" && slices.Contains(p.NonRetryableErrors, info.Type)) {
		return false
	}
	return p.MaxAttempts < 0 || attempt < p.MaxAttempts
}

// ActivityOptions configure one activity invocation. Zero fields take the
// defaults: StartToClose 10m, no schedule-to-close or heartbeat timeout,
// retry Exponential(3, 1s), queue "default".
type ActivityOptions struct {
	// StartToClose bounds one attempt.
	StartToClose time.Duration
	// ScheduleToClose bounds all attempts together, retries included.
	ScheduleToClose time.Duration
	// HeartbeatTimeout fails an attempt that does not heartbeat in time.
	HeartbeatTimeout time.Duration
	// Retry is the retry policy; nil means the default policy.
	Retry *RetryPolicy
	// Queue names the task queue.
	Queue string
	// Priority orders the activity's task among the tasks waiting for a
	// worker of its shard: PriorityHighest (1) first, PriorityLowest (5)
	// last, oldest first within a priority; 0 is PriorityDefault (3).
	// Dispatch-only: a running attempt is never pre-empted, and a task
	// that finds a worker free runs at once. Not part of the determinism
	// check: a new build may change it for runs in flight.
	Priority int

	// registrationRetry: the call left the retry policy to the
	// registration of an HTTP activity registered at run time
	// (RemoteActivity.Execute without a Retry).
	registrationRetry bool
}

// RegistrationRetry reports whether the retry policy is left to the
// registration of an HTTP activity registered at run time: set by
// RemoteActivity.Execute when neither its defaults nor the call's options
// carry a Retry. Engines read it when they run an attempt.
func (o ActivityOptions) RegistrationRetry() bool { return o.registrationRetry }

// WithDefaults returns the options with zero fields filled in.
func (o ActivityOptions) WithDefaults() ActivityOptions {
	if o.StartToClose <= 0 {
		o.StartToClose = DefaultStartToClose
	}
	// History keeps whole milliseconds: a positive bound under one would
	// be stored as none (and a start-to-close of 0 ms would leave the
	// attempt's lock shorter than the attempt).
	o.StartToClose = atLeastMS(o.StartToClose)
	o.ScheduleToClose = atLeastMS(o.ScheduleToClose)
	o.HeartbeatTimeout = atLeastMS(o.HeartbeatTimeout)
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	p := RetryPolicy{}
	if o.Retry != nil {
		p = *o.Retry
	}
	p = p.WithDefaults()
	o.Retry = &p
	return o
}

// atLeastMS raises a positive duration under a millisecond to one.
func atLeastMS(d time.Duration) time.Duration {
	if d > 0 && d < time.Millisecond {
		return time.Millisecond
	}
	return d
}

// merge overlays the non-zero fields of b on a.
func (o ActivityOptions) merge(b ActivityOptions) ActivityOptions {
	if b.StartToClose > 0 {
		o.StartToClose = b.StartToClose
	}
	if b.ScheduleToClose > 0 {
		o.ScheduleToClose = b.ScheduleToClose
	}
	if b.HeartbeatTimeout > 0 {
		o.HeartbeatTimeout = b.HeartbeatTimeout
	}
	if b.Retry != nil {
		o.Retry = b.Retry
	}
	if b.Queue != "" {
		o.Queue = b.Queue
	}
	if b.Priority != 0 {
		o.Priority = b.Priority
	}
	return o
}

// checkPriority checks an activity's priority (0 is the default).
func (o ActivityOptions) checkPriority() error {
	if o.Priority != 0 && (o.Priority < PriorityHighest || o.Priority > PriorityLowest) {
		return fmt.Errorf("priority %d is out of range (%d … %d)", o.Priority, PriorityHighest, PriorityLowest)
	}
	return nil
}

type retryWire struct {
	MaxAttempts        int      `json:"max_attempts"`
	InitialIntervalMS  int64    `json:"initial_interval_ms"`
	BackoffCoefficient float64  `json:"backoff_coefficient"`
	MaxIntervalMS      int64    `json:"max_interval_ms"`
	NonRetryableErrors []string `json:"non_retryable_errors,omitempty"`
}

type optionsWire struct {
	StartToCloseMS     int64      `json:"start_to_close_ms"`
	ScheduleToCloseMS  int64      `json:"schedule_to_close_ms,omitempty"`
	HeartbeatTimeoutMS int64      `json:"heartbeat_timeout_ms,omitempty"`
	Retry              *retryWire `json:"retry,omitempty"`
	Queue              string     `json:"queue,omitempty"`
	Priority           int        `json:"priority,omitempty"`
	RegistrationRetry  bool       `json:"registration_retry,omitempty"`
}

// MarshalJSON encodes durations as integer milliseconds.
func (o ActivityOptions) MarshalJSON() ([]byte, error) {
	w := optionsWire{
		StartToCloseMS:     o.StartToClose.Milliseconds(),
		ScheduleToCloseMS:  o.ScheduleToClose.Milliseconds(),
		HeartbeatTimeoutMS: o.HeartbeatTimeout.Milliseconds(),
		Queue:              o.Queue,
		Priority:           o.Priority,
		RegistrationRetry:  o.registrationRetry,
	}
	if o.Retry != nil {
		w.Retry = &retryWire{
			MaxAttempts:        o.Retry.MaxAttempts,
			InitialIntervalMS:  o.Retry.InitialInterval.Milliseconds(),
			BackoffCoefficient: o.Retry.BackoffCoefficient,
			MaxIntervalMS:      o.Retry.MaxInterval.Milliseconds(),
			NonRetryableErrors: o.Retry.NonRetryableErrors,
		}
	}
	return json.Marshal(w)
}

// Stored returns o as it reads back from history: MarshalJSON keeps whole
// milliseconds, so the durations are truncated to them (and the retry
// policy is a copy).
func (o ActivityOptions) Stored() ActivityOptions {
	ms := func(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }
	out := ActivityOptions{StartToClose: ms(o.StartToClose), ScheduleToClose: ms(o.ScheduleToClose),
		HeartbeatTimeout: ms(o.HeartbeatTimeout), Queue: o.Queue, Priority: o.Priority, registrationRetry: o.registrationRetry}
	if r := o.Retry; r != nil {
		out.Retry = &RetryPolicy{MaxAttempts: r.MaxAttempts, InitialInterval: ms(r.InitialInterval),
			BackoffCoefficient: r.BackoffCoefficient, MaxInterval: ms(r.MaxInterval),
			NonRetryableErrors: slices.Clone(r.NonRetryableErrors)}
	}
	return out
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (o *ActivityOptions) UnmarshalJSON(b []byte) error {
	var w optionsWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = ActivityOptions{
		StartToClose:     time.Duration(w.StartToCloseMS) * time.Millisecond,
		ScheduleToClose:  time.Duration(w.ScheduleToCloseMS) * time.Millisecond,
		HeartbeatTimeout: time.Duration(w.HeartbeatTimeoutMS) * time.Millisecond,
		Queue:            w.Queue,
		Priority:         w.Priority,

		registrationRetry: w.RegistrationRetry,
	}
	if w.Retry != nil {
		o.Retry = &RetryPolicy{
			MaxAttempts:        w.Retry.MaxAttempts,
			InitialInterval:    time.Duration(w.Retry.InitialIntervalMS) * time.Millisecond,
			BackoffCoefficient: w.Retry.BackoffCoefficient,
			MaxInterval:        time.Duration(w.Retry.MaxIntervalMS) * time.Millisecond,
			NonRetryableErrors: w.Retry.NonRetryableErrors,
		}
	}
	return nil
}
