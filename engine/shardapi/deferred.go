package shardapi

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Deferred-start policies.
const (
	PolicyDebounce = "debounce"
	PolicyBatch    = "batch"
	PolicyThrottle = "throttle"
)

// Deferred item states.
const (
	// DeferredPending: waiting for its fire time (a debounce or batch
	// item may still be collecting starts).
	DeferredPending = "pending"
	// DeferredFiring: closed; its keyed start is in the outbox.
	DeferredFiring = "firing"
	// DeferredStarted: its run started (ExecutionID).
	DeferredStarted = "started"
	// DeferredFailed: its start was refused for good (Reason).
	DeferredFailed = "failed"
)

// Defaults and limits of the policies.
const (
	// DebounceMaxWaitDefault is how long a debounced key fires at the
	// latest after its first start, however often it is started again.
	DebounceMaxWaitDefault = time.Hour
	// BatchMaxSizeDefault and BatchMaxWaitDefault bound a batch: it fires
	// when it holds max size starts or max wait after its first.
	BatchMaxSizeDefault = 100
	BatchMaxWaitDefault = time.Minute
	// MaxBatchSize is the largest batch_max_size.
	MaxBatchSize = 1000
	// ThrottleBacklogDefault is how many starts of a throttled key may
	// wait for their slot; MaxThrottleBacklog bounds it.
	ThrottleBacklogDefault = 1000
	MaxThrottleBacklog     = 100_000
)

// DeferredKeyPrefix begins the idempotency key of every deferred fire.
const DeferredKeyPrefix = "hv:deferred:"

// DeferredKey is the idempotency key of a deferred item's start:
// hv:deferred:<deferred id>.
func DeferredKey(id uuid.UUID) string { return DeferredKeyPrefix + id.String() }

// Debounce starts one run with the last input once Key has had no start
// for Window, or MaxWait (default DebounceMaxWaitDefault) after the
// first start at the latest.
type Debounce struct {
	Key     string
	Window  time.Duration
	MaxWait time.Duration
}

// Batch starts one run whose input is the JSON list of the inputs
// collected under Key: when it holds MaxSize of them, or MaxWait after
// the first at the latest. The first start's limits hold for its batch.
type Batch struct {
	Key     string
	MaxSize int
	MaxWait time.Duration
}

// Throttle paces the starts of Key: Rate starts per Per (evenly spaced,
// the first at once); at most MaxBacklog wait for their slot, and a
// start beyond them is refused with a ThrottledError.
type Throttle struct {
	Key        string
	Rate       int
	Per        time.Duration
	MaxBacklog int
}

// DeferRequest is a deferred start: exactly one policy is set. A
// WorkflowID is the run's (debounce: the last start's); none for a batch.
type DeferRequest struct {
	WorkflowName string
	WorkflowID   string
	Input        json.RawMessage
	Debounce     *Debounce
	Batch        *Batch
	Throttle     *Throttle
}

// Deferred is a deferred item.
type Deferred struct {
	ID           uuid.UUID `json:"deferred_id"`
	Policy       string    `json:"policy"`
	WorkflowName string    `json:"workflow_name"`
	Key          string    `json:"key"`
	State        string    `json:"state"`
	WorkflowID   string    `json:"workflow_id,omitempty"`
	// Starts is how many starts the item holds (a throttled item: 1).
	Starts      int        `json:"starts"`
	FirstAt     time.Time  `json:"first_at"`
	FireAt      time.Time  `json:"fire_at"`
	FiredAt     *time.Time `json:"fired_at,omitempty"`
	ExecutionID string     `json:"execution_id,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// ThrottledError refuses a throttled start whose key's backlog is full;
// RetryAfter is when its earliest waiting start fires.
type ThrottledError struct {
	Key        string
	Backlog    int
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("throttle key %q has %d starts waiting, its max_backlog", e.Key, e.Backlog)
}
