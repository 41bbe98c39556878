// Package flowlimit describes the flow control limits an admin sets at
// run time (PUT /api/harvest/admin/limits/{kind}/{name}): for one
// workflow, its concurrency limit; for one activity, its concurrency
// limit and its rate limit.
//
// A limit set at run time replaces whole the limits its workflow or
// activity declares in code (harvest.Workflow.WithConcurrency,
// harvest.Activity.WithConcurrency and WithRateLimit): an activity's
// record with a rate and no max_running lifts a declared concurrency
// limit, and a record that limits nothing (the zero limit) lifts every
// declared one. Deleting the record brings the declared limits back.
//
// A cluster keeps the records in its raft catalog, a dev node in its
// shard database; every shard engine reads them as it needs limits.
package flowlimit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harvestd/harvest"
)

// Kind is what a limit applies to: a workflow or an activity.
type Kind string

// Kinds.
const (
	// Workflow limits the runs of a workflow: MaxRunning and KeyPointer.
	Workflow Kind = "workflow"
	// Activity limits the attempts of an activity: MaxRunning and
	// KeyPointer, and a rate (PerSecond, Burst, RateKeyPointer).
	Activity Kind = "activity"
)

// Valid reports whether k is Workflow or Activity.
func (k Kind) Valid() bool { return k == Workflow || k == Activity }

// Bounds of a Limit's fields.
const (
	// MaxRunning bounds Limit.MaxRunning.
	MaxRunning = 1_000_000
	// MaxBurst bounds Limit.Burst.
	MaxBurst = 1_000_000
	// MaxNameLen bounds Limit.Name, in bytes.
	MaxNameLen = 256
	// MaxPointerLen bounds Limit.KeyPointer and Limit.RateKeyPointer, in
	// bytes.
	MaxPointerLen = 1024
)

// Sentinel errors of the package.
var (
	// ErrInvalid: a Limit field is missing or out of range.
	ErrInvalid = errors.New("invalid limit")
	// ErrUnknown: no limit of that kind and name is set.
	ErrUnknown = errors.New("unknown limit")
)

// Limit is the flow control of one workflow or activity, set at run
// time. The zero values of its numbers limit nothing.
type Limit struct {
	// Kind is Workflow or Activity.
	Kind Kind `json:"kind"`
	// Name is the workflow's or activity's name: 1 to MaxNameLen bytes
	// of UTF-8, without control characters or '/'.
	Name string `json:"name"`
	// MaxRunning is the most runs (attempts, for an activity) that run at
	// once, per key when KeyPointer is set; 0: no concurrency limit.
	MaxRunning int `json:"max_running"`
	// KeyPointer keys the concurrency limit by a value of the input (a
	// JSON pointer, RFC 6901); it needs MaxRunning.
	KeyPointer string `json:"key_pointer,omitempty"`
	// Scope is where a workflow's slots are counted: "shard" (also "")
	// or "cluster" (harvest.ConcurrencyLimit.Scope); it needs MaxRunning.
	Scope string `json:"scope,omitempty"`
	// PerSecond is an activity's average rate of attempts; 0: no rate
	// limit.
	PerSecond float64 `json:"per_second,omitempty"`
	// Burst is the most attempts of an activity started at once (0: 1);
	// it needs PerSecond.
	Burst int `json:"burst,omitempty"`
	// RateKeyPointer keys the rate limit by a value of the activity's
	// input; it needs PerSecond.
	RateKeyPointer string `json:"rate_key_pointer,omitempty"`
	// UpdatedAt is when the limit was last set.
	UpdatedAt time.Time `json:"updated_at"`
}

// Key is the catalog key of the limit of kind and name: "kind/name".
func Key(kind Kind, name string) string { return string(kind) + "/" + name }

// Key is the limit's catalog key.
func (l Limit) Key() string { return Key(l.Kind, l.Name) }

// Concurrency is the limit's concurrency limit.
func (l Limit) Concurrency() harvest.ConcurrencyLimit {
	return harvest.ConcurrencyLimit{MaxRunning: l.MaxRunning, KeyPointer: l.KeyPointer, Scope: l.Scope}
}

// Rate is the limit's rate limit (an activity's).
func (l Limit) Rate() harvest.RateLimit {
	return harvest.RateLimit{PerSecond: l.PerSecond, Burst: l.Burst, KeyPointer: l.RateKeyPointer}
}

// Same reports whether l and o limit the same thing the same way
// (UpdatedAt aside).
func (l Limit) Same(o Limit) bool {
	l.UpdatedAt, o.UpdatedAt = time.Time{}, time.Time{}
	return l == o
}

// Validate reports the first field that is missing or out of range, as
// ErrInvalid.
func (l Limit) Validate() error {
	if !l.Kind.Valid() {
		return invalid("kind %q must be %q or %q", l.Kind, Workflow, Activity)
	}
	if err := CheckName(l.Name); err != nil {
		return err
	}
	if err := l.checkConcurrency(); err != nil {
		return err
	}
	return l.checkRate()
}

// CheckName checks a limit's name (see Limit.Name).
func CheckName(name string) error {
	switch {
	case name == "" || len(name) > MaxNameLen:
		return invalid("name must be 1 to %d bytes", MaxNameLen)
	case !utf8.ValidString(name):
		return invalid("name must be valid UTF-8")
	case strings.ContainsFunc(name, isControl) || strings.Contains(name, "/"):
		return invalid("name must not contain control characters or '/'")
	}
	return nil
}

func (l Limit) checkConcurrency() error {
	if l.MaxRunning < 0 || l.MaxRunning > MaxRunning {
		return invalid("max_running %d is not in 0…%d", l.MaxRunning, MaxRunning)
	}
	if l.KeyPointer != "" && l.MaxRunning == 0 {
		return invalid("key_pointer needs a max_running")
	}
	if l.Scope == harvest.ScopeCluster && (l.Kind != Workflow || l.MaxRunning == 0) {
		return invalid("scope cluster needs a workflow's max_running (activities are limited per shard)")
	}
	if err := checkPointer("key_pointer", l.KeyPointer); err != nil {
		return err
	}
	if err := l.Concurrency().Validate(); err != nil {
		return invalid("%v", err)
	}
	return nil
}

func (l Limit) checkRate() error {
	if l.Kind == Workflow {
		if l.PerSecond != 0 || l.Burst != 0 || l.RateKeyPointer != "" {
			return invalid("per_second, burst and rate_key_pointer limit activities, not workflows")
		}
		return nil
	}
	if err := l.Rate().Validate(); err != nil {
		return invalid("%v", err)
	}
	if l.Burst > MaxBurst {
		return invalid("burst %d is not in 0…%d", l.Burst, MaxBurst)
	}
	if (l.Burst != 0 || l.RateKeyPointer != "") && l.PerSecond == 0 {
		return invalid("burst and rate_key_pointer need a per_second")
	}
	return checkPointer("rate_key_pointer", l.RateKeyPointer)
}

// checkPointer bounds a pointer and keeps out what PostgreSQL cannot
// take as a path element (NUL) and other control characters;
// harvest.ConcurrencyLimit.Validate checks its syntax.
func checkPointer(field, p string) error {
	switch {
	case len(p) > MaxPointerLen:
		return invalid("%s is longer than %d bytes", field, MaxPointerLen)
	case !utf8.ValidString(p):
		return invalid("%s must be valid UTF-8", field)
	case strings.ContainsFunc(p, isControl):
		return invalid("%s must not contain control characters", field)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalid)
}

// Sorted lists the limits of m (keyed by Key) by kind, then name.
func Sorted(m map[string]Limit) []Limit {
	out := make([]Limit, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
