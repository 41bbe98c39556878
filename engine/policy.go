package engine

// decision is what a start does about the run holding its workflow id.
type decision int

const (
	decideFresh             decision = iota // create a new run (releasing a closed prior's slot)
	decideAttach                            // return the prior run
	decideReject                            // 409
	decideTerminateAndStart                 // terminate the running prior, then create
	decideSignal                            // signal-with-start: signal the prior run
)

func (d decision) String() string {
	return [...]string{"fresh", "attach", "reject", "terminate+fresh", "signal"}[d]
}

// decideStart is the reuse_policy × conflict_policy matrix of a plain start.
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
func decideStart(priorState string, reuse ReusePolicy, conflict ConflictPolicy) decision {
	switch {
	case priorState == "":
		return decideFresh
	case priorState == StateRunning:
		return decideRunning(reuse, conflict)
	}
	switch reuse {
	case ReuseRejectDuplicate:
		return decideReject
	case ReuseAllowDuplicateFailedOnly:
		if priorState == StateCompleted {
			return decideAttach
		}
		return decideFresh
	case ReuseTerminateIfRunning:
		return decideFresh
	}
	return decideAttach
}

func decideRunning(reuse ReusePolicy, conflict ConflictPolicy) decision {
	switch conflict {
	case ConflictFail:
		return decideReject
	case ConflictUseExisting:
		return decideAttach
	case ConflictTerminateExisting:
		return decideTerminateAndStart
	}
	switch reuse {
	case ReuseRejectDuplicate:
		return decideReject
	case ReuseTerminateIfRunning:
		return decideTerminateAndStart
	}
	return decideAttach
}

// decideSignalWithStart is the signal-with-start matrix:
//
//	prior       allow_dup        reject  failed_only     terminate_if_running
//	none        fresh+signal     fresh   fresh           fresh
//	RUNNING     signal           reject  signal          terminate+fresh+signal
//	closed      fresh+signal     reject  fresh+signal    fresh+signal
//
// A TERMINATED run holds no slot, so it reads as "none".
func decideSignalWithStart(priorState string, reuse ReusePolicy) decision {
	switch {
	case priorState == "":
		return decideFresh
	case reuse == ReuseRejectDuplicate:
		return decideReject
	case priorState != StateRunning:
		return decideFresh
	case reuse == ReuseTerminateIfRunning:
		return decideTerminateAndStart
	}
	return decideSignal
}
