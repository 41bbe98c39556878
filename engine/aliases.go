package engine

import (
	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/ssrf"
	"github.com/harvestd/harvest/engine/shardapi"
)

// The shard's vocabulary is declared in package shardapi; the engine
// re-exports it under the same names, so that callers of the engine (api/,
// node/, server/, harvesttest/, cmd/) and its own code keep using
// engine.StartResult, engine.ErrNotFound and the like. Types are aliases,
// errors the same values (errors.Is holds across the two names),
// constants the same constants, and functions forwarders (which inline).
// See shardapi for each one's documentation.

// Errors (shardapi/errors.go).
var (
	ErrNotFound            = shardapi.ErrNotFound
	ErrUnknownWorkflow     = shardapi.ErrUnknownWorkflow
	ErrInvalidArgument     = shardapi.ErrInvalidArgument
	ErrTerminateNotAllowed = shardapi.ErrTerminateNotAllowed
	ErrLeaseHeld           = shardapi.ErrLeaseHeld
	ErrShardMismatch       = shardapi.ErrShardMismatch
	ErrNotRunning          = shardapi.ErrNotRunning
	ErrDuplicate           = shardapi.ErrDuplicate
	ErrUnavailable         = shardapi.ErrUnavailable
	ErrWorkflowIDBusy      = shardapi.ErrWorkflowIDBusy
	ErrTaskToken           = shardapi.ErrTaskToken
	ErrStaleAttempt        = shardapi.ErrStaleAttempt
	ErrAnswered            = shardapi.ErrAnswered
	ErrScheduleExists      = shardapi.ErrScheduleExists
	ErrQueryTimeout        = shardapi.ErrQueryTimeout
)

// Typed errors (shardapi/errors.go and the files of their operations).
type (
	NotFoundError      = shardapi.NotFoundError
	OwnershipLostError = shardapi.OwnershipLostError
	LeaseHeldError     = shardapi.LeaseHeldError
	ConflictError      = shardapi.ConflictError
	TerminalError      = shardapi.TerminalError
	RefusedError       = shardapi.RefusedError
	CallbackError      = shardapi.CallbackError
	AtomicError        = shardapi.AtomicError
	MovedError         = shardapi.MovedError
	GateError          = shardapi.GateError
	ThrottledError     = shardapi.ThrottledError
)

// IsDefinite is shardapi.IsDefinite: whether err is a final answer to an
// outbox operation, not worth retrying.
func IsDefinite(err error) bool { return shardapi.IsDefinite(err) }

// Execution ids (shardapi/ids.go).
const UnencodedShard = shardapi.UnencodedShard

// NewExecutionID is shardapi.NewExecutionID: a random id whose first two
// bytes are the shard id.
func NewExecutionID(shard uint16) uuid.UUID { return shardapi.NewExecutionID(shard) }

// ShardOf is shardapi.ShardOf: the shard an execution id was minted on.
func ShardOf(id uuid.UUID) uint16 { return shardapi.ShardOf(id) }

// ParseExecutionID is shardapi.ParseExecutionID: it parses a textual
// execution id.
func ParseExecutionID(s string) (uuid.UUID, error) { return shardapi.ParseExecutionID(s) }

// Execution states (shardapi/execution.go).
const (
	StateQueued         = shardapi.StateQueued
	StateRunning        = shardapi.StateRunning
	StateCompleted      = shardapi.StateCompleted
	StateFailed         = shardapi.StateFailed
	StateCancelled      = shardapi.StateCancelled
	StateTimedOut       = shardapi.StateTimedOut
	StateTerminated     = shardapi.StateTerminated
	StateContinuedAsNew = shardapi.StateContinuedAsNew
)

// IsTerminal is shardapi.IsTerminal: whether a state is closed.
func IsTerminal(state string) bool { return shardapi.IsTerminal(state) }

// Starts (shardapi/start.go, shardapi/policy.go, shardapi/placement.go).
type (
	StartResult    = shardapi.StartResult
	Callback       = shardapi.Callback
	ReusePolicy    = shardapi.ReusePolicy
	ConflictPolicy = shardapi.ConflictPolicy
	Placement      = shardapi.Placement
	ClaimRequest   = shardapi.ClaimRequest
	ClaimResult    = shardapi.ClaimResult
	SlotHolder     = shardapi.SlotHolder
)

// Limits of starts, and the reuse and conflict policies.
const (
	MaxCallbacks    = shardapi.MaxCallbacks
	MaxAtomicStarts = shardapi.MaxAtomicStarts

	ReuseAllowDuplicate           = shardapi.ReuseAllowDuplicate
	ReuseRejectDuplicate          = shardapi.ReuseRejectDuplicate
	ReuseAllowDuplicateFailedOnly = shardapi.ReuseAllowDuplicateFailedOnly
	ReuseTerminateIfRunning       = shardapi.ReuseTerminateIfRunning

	ConflictUnspecified       = shardapi.ConflictUnspecified
	ConflictFail              = shardapi.ConflictFail
	ConflictUseExisting       = shardapi.ConflictUseExisting
	ConflictTerminateExisting = shardapi.ConflictTerminateExisting
)

// ParseReusePolicy is shardapi.ParseReusePolicy: it validates a reuse
// policy ("" → allow_duplicate).
func ParseReusePolicy(s string) (ReusePolicy, error) { return shardapi.ParseReusePolicy(s) }

// ParseConflictPolicy is shardapi.ParseConflictPolicy: it validates a
// conflict policy ("" → unspecified).
func ParseConflictPolicy(s string) (ConflictPolicy, error) { return shardapi.ParseConflictPolicy(s) }

// RunningHolder is shardapi.RunningHolder: the execution id of a workflow
// id's slot holder when it is running; an ErrNotFound otherwise.
func RunningHolder(workflowName, workflowID string, h SlotHolder, ok bool) (uuid.UUID, error) {
	return shardapi.RunningHolder(workflowName, workflowID, h, ok)
}

// Signals, cancels and terminates (shardapi/signal.go); async completions
// (shardapi/async.go).
type (
	SignalRequest         = shardapi.SignalRequest
	SignalResult          = shardapi.SignalResult
	SignalWithStartResult = shardapi.SignalWithStartResult
	CloseResult           = shardapi.CloseResult
	AsyncAnswer           = shardapi.AsyncAnswer
)

// Reads (shardapi/query.go, shardapi/probe.go).
type (
	Execution       = shardapi.Execution
	PendingActivity = shardapi.PendingActivity
	PendingTimer    = shardapi.PendingTimer
	Description     = shardapi.Description
	Child           = shardapi.Child
	Outcome         = shardapi.Outcome
	HistoryQuery    = shardapi.HistoryQuery
	HistoryPage     = shardapi.HistoryPage
	ListQuery       = shardapi.ListQuery
	ListPage        = shardapi.ListPage
	DrainStatus     = shardapi.DrainStatus
	StateCacheStats = shardapi.StateCacheStats
)

// Limits of the read paths, and the child states.
const (
	DescribeHistoryLimit    = shardapi.DescribeHistoryLimit
	HistoryPageDefault      = shardapi.HistoryPageDefault
	HistoryPageMax          = shardapi.HistoryPageMax
	HistoryPageBytesDefault = shardapi.HistoryPageBytesDefault
	ListPageDefault         = shardapi.ListPageDefault
	ListPageMax             = shardapi.ListPageMax

	ChildInitiated   = shardapi.ChildInitiated
	ChildStartFailed = shardapi.ChildStartFailed
)

// Schedules (shardapi/schedule.go).
type (
	ScheduleSpec = shardapi.ScheduleSpec
	Schedule     = shardapi.Schedule
	ScheduleFire = shardapi.ScheduleFire
	ScheduleDef  = shardapi.ScheduleDef
)

// Overlap policies and defaults of schedules.
const (
	OverlapSkip          = shardapi.OverlapSkip
	OverlapBufferOne     = shardapi.OverlapBufferOne
	OverlapAllowAll      = shardapi.OverlapAllowAll
	CatchUpWindowDefault = shardapi.CatchUpWindowDefault
)

// ValidScheduleID is shardapi.ValidScheduleID: whether id may name a
// schedule.
func ValidScheduleID(id string) error { return shardapi.ValidScheduleID(id) }

// Deferred starts (shardapi/deferred.go).
type (
	Debounce     = shardapi.Debounce
	Batch        = shardapi.Batch
	Throttle     = shardapi.Throttle
	DeferRequest = shardapi.DeferRequest
	Deferred     = shardapi.Deferred
)

// Policies, item states, defaults and limits of deferred starts.
const (
	PolicyDebounce = shardapi.PolicyDebounce
	PolicyBatch    = shardapi.PolicyBatch
	PolicyThrottle = shardapi.PolicyThrottle

	DeferredPending = shardapi.DeferredPending
	DeferredFiring  = shardapi.DeferredFiring
	DeferredStarted = shardapi.DeferredStarted
	DeferredFailed  = shardapi.DeferredFailed

	DebounceMaxWaitDefault = shardapi.DebounceMaxWaitDefault
	BatchMaxSizeDefault    = shardapi.BatchMaxSizeDefault
	BatchMaxWaitDefault    = shardapi.BatchMaxWaitDefault
	MaxBatchSize           = shardapi.MaxBatchSize
	ThrottleBacklogDefault = shardapi.ThrottleBacklogDefault
	MaxThrottleBacklog     = shardapi.MaxThrottleBacklog

	DeferredKeyPrefix = shardapi.DeferredKeyPrefix
)

// DeferredKey is shardapi.DeferredKey: the idempotency key of a deferred
// item's start.
func DeferredKey(id uuid.UUID) string { return shardapi.DeferredKey(id) }

// Admission gates (shardapi/gates.go).
type Gate = shardapi.Gate

// Gate scopes.
const (
	GateCluster      = shardapi.GateCluster
	GateWorkflowName = shardapi.GateWorkflowName
	GateShard        = shardapi.GateShard
)

// CallbackPolicy decides which addresses completion callbacks and HTTP
// activities may reach (internal/ssrf).
type CallbackPolicy = ssrf.Policy
