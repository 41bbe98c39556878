package shardapi

import "fmt"

// ReusePolicy governs a start whose workflow id is held by a closed run
// (and, with ConflictUnspecified, by a running one).
type ReusePolicy string

// Reuse policies; the zero value means ReuseAllowDuplicate.
const (
	ReuseAllowDuplicate           ReusePolicy = "allow_duplicate"
	ReuseRejectDuplicate          ReusePolicy = "reject_duplicate"
	ReuseAllowDuplicateFailedOnly ReusePolicy = "allow_duplicate_failed_only"
	ReuseTerminateIfRunning       ReusePolicy = "terminate_if_running"
)

// ConflictPolicy governs a start whose workflow id is held by a running run.
type ConflictPolicy string

// Conflict policies; the zero value means ConflictUnspecified.
const (
	ConflictUnspecified       ConflictPolicy = "unspecified"
	ConflictFail              ConflictPolicy = "fail"
	ConflictUseExisting       ConflictPolicy = "use_existing"
	ConflictTerminateExisting ConflictPolicy = "terminate_existing"
)

// ParseReusePolicy validates a reuse policy ("" → allow_duplicate).
func ParseReusePolicy(s string) (ReusePolicy, error) {
	switch p := ReusePolicy(s); p {
	case "":
		return ReuseAllowDuplicate, nil
	case ReuseAllowDuplicate, ReuseRejectDuplicate, ReuseAllowDuplicateFailedOnly, ReuseTerminateIfRunning:
		return p, nil
	}
	return "", fmt.Errorf("reuse_policy %q (want allow_duplicate, reject_duplicate, allow_duplicate_failed_only or terminate_if_running): %w", s, ErrInvalidArgument)
}

// ParseConflictPolicy validates a conflict policy ("" → unspecified).
func ParseConflictPolicy(s string) (ConflictPolicy, error) {
	switch p := ConflictPolicy(s); p {
	case "":
		return ConflictUnspecified, nil
	case ConflictUnspecified, ConflictFail, ConflictUseExisting, ConflictTerminateExisting:
		return p, nil
	}
	return "", fmt.Errorf("conflict_policy %q (want unspecified, fail, use_existing or terminate_existing): %w", s, ErrInvalidArgument)
}
