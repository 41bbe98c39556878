package harvest

import (
	"fmt"
	"strings"
)

// Start priorities: 1 is dispatched first, 5 last; a start without one
// has PriorityDefault. Priority orders only the dispatch of queued runs:
// it never pre-empts a running one.
const (
	PriorityHighest = 1
	PriorityDefault = 3
	PriorityLowest  = 5
)

// MaxFairnessWeight bounds a start's fairness weight (1, the default, to
// MaxFairnessWeight): queued runs of a fairness key of weight w are
// dispatched w times as often as those of a key of weight 1.
const MaxFairnessWeight = 1000

// ConcurrencyLimit caps how many runs of a workflow run at once. A start
// over the limit is accepted as usual (201, or 200 for a keyed replay)
// and its run waits in state QUEUED until a slot frees; a slot frees when
// a run closes in any way (continue-as-new keeps it). See the README's
// "Flow control".
type ConcurrencyLimit struct {
	// MaxRunning is the most runs that hold a slot at once, per key when
	// the limit is keyed; 0 is no limit.
	MaxRunning int
	// KeyPointer, when set, keys the limit by a value of the input: a
	// JSON pointer (RFC 6901) such as "/customer_id" naming a string,
	// number or boolean, so that each value has MaxRunning slots. A start
	// may name its key itself (concurrency_key), which wins.
	KeyPointer string
	// Scope is where the slots are counted: ScopeShard (the default,
	// also "") counts each shard's runs of a key apart, in the start's
	// own transaction — exact on a single shard; ScopeCluster counts the
	// runs of a key on every shard together, through the key's keeper (a
	// system workflow run): each run then waits QUEUED for the keeper's
	// grant, two cross-shard signals, before it starts. Activities are
	// limited per shard only.
	Scope string
}

// Scopes of a ConcurrencyLimit.
const (
	ScopeShard   = "shard"
	ScopeCluster = "cluster"
)

// Cluster reports whether the limit is counted across the cluster.
func (l ConcurrencyLimit) Cluster() bool { return l.Scope == ScopeCluster }

// Limited reports whether the limit caps anything.
func (l ConcurrencyLimit) Limited() bool { return l.MaxRunning > 0 }

// Validate checks the limit: MaxRunning not negative, KeyPointer empty or
// a JSON pointer.
func (l ConcurrencyLimit) Validate() error {
	if l.MaxRunning < 0 {
		return fmt.Errorf("max running %d is negative", l.MaxRunning)
	}
	if l.Scope != "" && l.Scope != ScopeShard && l.Scope != ScopeCluster {
		return fmt.Errorf("scope %q: want %q or %q", l.Scope, ScopeShard, ScopeCluster)
	}
	if l.KeyPointer != "" && !strings.HasPrefix(l.KeyPointer, "/") {
		return fmt.Errorf("key pointer %q is not a JSON pointer (it starts with /)", l.KeyPointer)
	}
	if _, err := ParsePointer(l.KeyPointer); err != nil {
		return err
	}
	return nil
}

// WithConcurrency limits how many runs of the workflow run at once.
func (w *Workflow[In, Out]) WithConcurrency(l ConcurrencyLimit) *Workflow[In, Out] {
	w.concurrency = l
	return w
}

// WithConcurrency limits how many attempts of the activity run at once,
// per key of its input when the limit is keyed (KeyPointer; a value
// missing from the input is the key ""). An attempt holds its slot from
// its dispatch until its outcome is recorded, so a worker that dies
// mid-attempt keeps the slot until the attempt is retried or recorded:
// never more than MaxRunning attempts run at once. Attempts over the
// limit wait, in the order they were scheduled. See the README's "Flow
// control".
func (a *Activity[In, Out]) WithConcurrency(l ConcurrencyLimit) *Activity[In, Out] {
	a.concurrency = l
	return a
}

// HasActivityLimits reports, without a lock, whether some registered
// activity declares a concurrency or a rate limit.
func (r *Registry) HasActivityLimits() bool { return r.actLimited.Load() }

// LimitedActivities lists the registered activities that declare a
// concurrency limit, with their limits.
func (r *Registry) LimitedActivities() map[string]ConcurrencyLimit {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]ConcurrencyLimit{}
	for name, d := range r.activities {
		if d.concurrency.Limited() {
			out[name] = d.concurrency
		}
	}
	return out
}

// WorkflowConcurrency returns the concurrency limit a registered workflow
// declares (the zero limit when it has none or is not registered).
func (r *Registry) WorkflowConcurrency(name string) ConcurrencyLimit {
	def, _ := r.workflow(name)
	return def.concurrency
}

// HasLimits reports, without a lock, whether some registered workflow
// declares a concurrency limit.
func (r *Registry) HasLimits() bool { return r.limited.Load() }

// LimitedWorkflows lists the registered workflows that declare a
// concurrency limit, with their limits.
func (r *Registry) LimitedWorkflows() map[string]ConcurrencyLimit {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]ConcurrencyLimit{}
	for name, d := range r.workflows {
		if d.concurrency.Limited() {
			out[name] = d.concurrency
		}
	}
	return out
}

// ParsePointer splits a JSON pointer (RFC 6901) into its reference
// tokens, unescaped ("~1" is "/", "~0" is "~"): "" is the whole document.
func ParsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q does not start with /: %w", p, ErrPointer)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		u, err := unescapeToken(t)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		tokens[i] = u
	}
	return tokens, nil
}

// unescapeToken undoes a reference token's escapes; a "~" not followed
// by 0 or 1 is an error.
func unescapeToken(t string) (string, error) {
	if !strings.Contains(t, "~") {
		return t, nil
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] != '~' {
			b.WriteByte(t[i])
			continue
		}
		if i+1 == len(t) || (t[i+1] != '0' && t[i+1] != '1') {
			return "", fmt.Errorf("~ at byte %d is not ~0 or ~1: %w", i, ErrPointer)
		}
		b.WriteByte("~/"[t[i+1]-'0'])
		i++
	}
	return b.String(), nil
}
