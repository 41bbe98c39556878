package intake

import "github.com/harvestd/harvest/engine/shardapi"

// Decision is what a start does about the run holding its workflow id.
type Decision int

// The decisions.
const (
	DecideFresh             Decision = iota // create a new run (releasing a closed prior's slot)
	DecideAttach                            // return the prior run
	DecideReject                            // 409
	DecideTerminateAndStart                 // terminate the running prior, then create
	DecideSignal                            // signal-with-start: signal the prior run
)

// String names the decision, for test messages.
func (d Decision) String() string {
	return [...]string{"fresh", "attach", "reject", "terminate+fresh", "signal"}[d]
}

// DecideStart is the reuse_policy × conflict_policy matrix of a plain start.
// priorState is "" when no run holds the workflow id.
//
//	running prior   unspecified      fail    use_existing  terminate_existing
//	allow_duplicate attach           reject  attach        terminate+fresh
//	reject_dup.     reject           reject  attach        terminate+fresh
//	failed_only     attach           reject  attach        terminate+fresh
//	terminate_if_r. terminate+fresh  reject  attach        terminate+fresh
//
// A closed prior is governed by the reuse policy alone: allow_duplicate
// returns it, reject_duplicate refuses, failed_only starts fresh after
// FAILED, CANCELLED or TIMED_OUT (and returns a COMPLETED run), and
// terminate_if_running always starts fresh.
func DecideStart(priorState string, reuse shardapi.ReusePolicy, conflict shardapi.ConflictPolicy) Decision {
	switch {
	case priorState == "":
		return DecideFresh
	case !shardapi.IsTerminal(priorState):
		return decideRunning(reuse, conflict)
	}
	switch reuse {
	case shardapi.ReuseRejectDuplicate:
		return DecideReject
	case shardapi.ReuseAllowDuplicateFailedOnly:
		if priorState == shardapi.StateCompleted {
			return DecideAttach
		}
		return DecideFresh
	case shardapi.ReuseTerminateIfRunning:
		return DecideFresh
	}
	return DecideAttach
}

func decideRunning(reuse shardapi.ReusePolicy, conflict shardapi.ConflictPolicy) Decision {
	switch conflict {
	case shardapi.ConflictFail:
		return DecideReject
	case shardapi.ConflictUseExisting:
		return DecideAttach
	case shardapi.ConflictTerminateExisting:
		return DecideTerminateAndStart
	}
	switch reuse {
	case shardapi.ReuseRejectDuplicate:
		return DecideReject
	case shardapi.ReuseTerminateIfRunning:
		return DecideTerminateAndStart
	}
	return DecideAttach
}

// DecideSignalWithStart is the signal-with-start matrix:
//
//	prior       allow_dup        reject  failed_only     terminate_if_running
//	none        fresh+signal     fresh   fresh           fresh
//	RUNNING     signal           reject  signal          terminate+fresh+signal
//	closed      fresh+signal     reject  fresh+signal    fresh+signal
//
// A TERMINATED run holds no slot, so it reads as "none".
func DecideSignalWithStart(priorState string, reuse shardapi.ReusePolicy) Decision {
	switch {
	case priorState == "":
		return DecideFresh
	case reuse == shardapi.ReuseRejectDuplicate:
		return DecideReject
	case shardapi.IsTerminal(priorState):
		return DecideFresh
	case reuse == shardapi.ReuseTerminateIfRunning:
		return DecideTerminateAndStart
	}
	return DecideSignal
}
