package harvest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// IdempotencyKey is a stable, retry-safe key for one logical activity
// invocation (or, through Subkey, one of its outbound calls). Pass it to
// downstream systems that deduplicate (e.g. as an Idempotency-Key header).
type IdempotencyKey string

// keyPrefix marks Harvest keys; the rest is 32 hex digits of SHA-256.
const keyPrefix = "hvk_"

// ActivityKey derives the idempotency key of the activity with the given
// deterministic id inside an execution. The derivation is fixed forever:
// "hvk_" + the first 16 bytes, in hex, of
// SHA-256("harvest/activity/v1" 0x00 executionID 0x00 activityID).
func ActivityKey(executionID, activityID string) IdempotencyKey {
	return deriveKey("harvest/activity/v1", executionID, activityID)
}

// Subkey derives a stable child key per name: the same name always gives
// the same subkey, different names give different subkeys.
func (k IdempotencyKey) Subkey(name string) IdempotencyKey {
	return deriveKey("harvest/subkey/v1", string(k), name)
}

// String returns the key as text.
func (k IdempotencyKey) String() string { return string(k) }

func deriveKey(domain, a, b string) IdempotencyKey {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write([]byte(a))
	h.Write([]byte{0})
	h.Write([]byte(b))
	sum := h.Sum(nil)
	return IdempotencyKey(keyPrefix + hex.EncodeToString(sum[:16]))
}

// ActivityInfo describes the attempt an activity function is running.
type ActivityInfo struct {
	ExecutionID  string
	WorkflowName string
	WorkflowID   string
	ActivityID   string
	ActivityName string
	// Attempt is 1 for the first try.
	Attempt        int
	IdempotencyKey IdempotencyKey
	// HeartbeatDetails are the details of the last heartbeat of an earlier
	// attempt (nil if none), so a retry can resume where it stopped.
	HeartbeatDetails json.RawMessage
	// Deadline is when this attempt times out.
	Deadline time.Time
}

// HeartbeatFunc records a heartbeat; engines supply it.
type HeartbeatFunc func(ctx context.Context, details json.RawMessage) error

// ActivityContext is the context.Context an activity runs with. It is
// cancelled when the attempt times out, misses a heartbeat or the engine
// stops.
type ActivityContext struct {
	context.Context
	info      ActivityInfo
	heartbeat HeartbeatFunc
	logger    zerolog.Logger
	outbound  OutboundHTTP // set by the engine (WithOutbound); HTTP activities need it
	mint      TokenFunc    // set by the engine (WithTaskToken)
	tokenMu   sync.Mutex   // guards token: goroutines of the activity may ask at once
	token     string       // minted once per attempt
}

// TokenFunc mints the task token of an attempt; engines supply it.
type TokenFunc func(ctx context.Context) (string, error)

// WithTaskToken returns c with the engine's task token minting (engines
// call it).
func (c *ActivityContext) WithTaskToken(mint TokenFunc) *ActivityContext {
	c.mint = mint
	return c
}

// TaskToken returns the attempt's task token, minting it on the first
// call: give it to the remote side that finishes the activity, then
// return ErrResultPending. The token is the credential of
// POST /api/harvest/activities/complete|fail|heartbeat (header
// Harvest-Task-Token) for this attempt only: keep it out of URLs and logs.
func (c *ActivityContext) TaskToken() (string, error) {
	c.tokenMu.Lock()
	defer c.tokenMu.Unlock()
	if c.token != "" {
		return c.token, nil
	}
	if c.mint == nil {
		return "", NewNonRetryableError("async_unavailable", "task tokens are minted by an engine (none here)")
	}
	tok, err := c.mint(c)
	if err != nil {
		return "", err
	}
	c.token = tok
	return tok, nil
}

// TokenMinted reports whether TaskToken minted a token (engines check it
// when an activity returns ErrResultPending).
func (c *ActivityContext) TokenMinted() bool {
	c.tokenMu.Lock()
	defer c.tokenMu.Unlock()
	return c.token != ""
}

// NewActivityContext builds an activity context; engines (and unit tests of
// activity functions) call it. A nil heartbeat function accepts heartbeats
// and drops them.
func NewActivityContext(ctx context.Context, info ActivityInfo, heartbeat HeartbeatFunc, logger zerolog.Logger) *ActivityContext {
	return &ActivityContext{Context: ctx, info: info, heartbeat: heartbeat, logger: logger}
}

// Info describes the running attempt.
func (c *ActivityContext) Info() ActivityInfo { return c.info }

// IdempotencyKey is the invocation's stable key.
func (c *ActivityContext) IdempotencyKey() IdempotencyKey { return c.info.IdempotencyKey }

// Subkey is IdempotencyKey().Subkey(name).
func (c *ActivityContext) Subkey(name string) IdempotencyKey {
	return c.info.IdempotencyKey.Subkey(name)
}

// Attempt is the 1-based attempt number.
func (c *ActivityContext) Attempt() int { return c.info.Attempt }

// Logger returns a logger tagged with the execution and activity.
func (c *ActivityContext) Logger() *zerolog.Logger { return &c.logger }

// Heartbeat records progress details and resets the heartbeat timeout.
func (c *ActivityContext) Heartbeat(details any) error {
	raw, err := encodeValue(details)
	if err != nil {
		return err
	}
	if c.heartbeat == nil {
		return nil
	}
	return c.heartbeat(c, raw)
}

// HeartbeatDetails decodes the details of the last heartbeat of an earlier
// attempt into out and reports whether there were any.
func (c *ActivityContext) HeartbeatDetails(out any) (bool, error) {
	if len(c.info.HeartbeatDetails) == 0 {
		return false, nil
	}
	return true, json.Unmarshal(c.info.HeartbeatDetails, out)
}
