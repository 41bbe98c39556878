package shardapi

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the engine.
var (
	// ErrNotFound: no such execution on this shard.
	ErrNotFound = errors.New("not found")
	// ErrUnknownWorkflow: the workflow name is not registered.
	ErrUnknownWorkflow = errors.New("unknown workflow")
	// ErrInvalidArgument: a request field is missing or malformed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrTerminateNotAllowed: the policy would terminate a running run but
	// the caller may not terminate.
	ErrTerminateNotAllowed = errors.New("terminating a running execution needs admin rights")
	// ErrLeaseHeld: another live node holds the shard lease.
	ErrLeaseHeld = errors.New("shard lease held by another node")
	// ErrShardMismatch: the database belongs to another shard id.
	ErrShardMismatch = errors.New("database belongs to another shard")
	// ErrNotRunning: the engine is not started or has stopped.
	ErrNotRunning = errors.New("engine not running")
	// ErrDuplicate: a unique constraint refused a row (SQLSTATE 23505).
	ErrDuplicate = errors.New("duplicate")
	// ErrUnavailable: the shard's database cannot be reached right now.
	ErrUnavailable = errors.New("shard database unavailable")
	// ErrWorkflowIDBusy: an atomic batch start's workflow id has an open run.
	ErrWorkflowIDBusy = errors.New("workflow id has an open run")
	// ErrTaskToken: no attempt has that task token (or it is not one).
	ErrTaskToken = errors.New("unknown task token")
	// ErrStaleAttempt: the task token's attempt is no longer the
	// activity's current one (it timed out, was retried or answered).
	ErrStaleAttempt = errors.New("the task token's attempt is no longer current")
	// ErrAnswered: the task token's attempt was answered another way
	// (completed, then failed: or the reverse).
	ErrAnswered = errors.New("the task token's attempt was answered already")
	// ErrScheduleExists: a live schedule already has the id.
	ErrScheduleExists = errors.New("schedule exists")
)

// NotFoundError names what was not found (a schedule, a deferred item);
// it is ErrNotFound.
type NotFoundError struct {
	What string // "schedule", "deferred item"
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.What, e.ID) }

// Is makes a NotFoundError ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// OwnershipLostError reports that another node took the shard lease: the
// write was not committed. Owner and Epoch are the lease's current holder.
type OwnershipLostError struct {
	Shard uint16
	Epoch int64
	Owner string
}

func (e *OwnershipLostError) Error() string {
	return fmt.Sprintf("shard %d ownership lost: now owned by %q at epoch %d", e.Shard, e.Owner, e.Epoch)
}

// LeaseHeldError reports that another live node holds the shard lease;
// it matches ErrLeaseHeld.
type LeaseHeldError struct {
	Shard     uint16
	Owner     string
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("shard %d lease held by %q until %s", e.Shard, e.Owner, e.ExpiresAt.Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// ConflictError is a start refused by the reuse/conflict policy (HTTP 409).
type ConflictError struct {
	ExistingExecutionID string
	ExistingState       string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("workflow id already used by execution %s (%s)", e.ExistingExecutionID, e.ExistingState)
}

// TerminalError refuses an operation on a closed execution (HTTP 409).
type TerminalError struct {
	ExecutionID string
	State       string
}

func (e *TerminalError) Error() string {
	return fmt.Sprintf("execution %s is %s", e.ExecutionID, e.State)
}

// ErrQueryTimeout is returned by Query when the query ran past
// Config.QueryTimeout.
var ErrQueryTimeout = errors.New("query timed out")
