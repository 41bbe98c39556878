package harvest

import (
	"fmt"
	"math"
)

// RateLimit caps how fast attempts of an activity start: PerSecond on
// average, and up to Burst at once after a quiet spell (a token bucket
// that holds Burst tokens and gains PerSecond a second; an attempt takes
// one). With KeyPointer each value of the activity's input has a bucket
// of its own (say, per payment provider). Attempts over the rate wait,
// oldest first. The bucket is kept in the shard's database and taken in
// the transaction that claims the attempt: a restart, a crash or a
// failover resumes it where it was, never with a fresh burst. See the
// README's "Flow control".
type RateLimit struct {
	// PerSecond is the average rate of attempts; 0 is no limit.
	PerSecond float64
	// Burst is the most attempts started at once (default 1).
	Burst int
	// KeyPointer, when set, keys the limit by a value of the activity's
	// input (a JSON pointer, RFC 6901); a missing value is the key "".
	KeyPointer string
}

// Limited reports whether the limit caps anything.
func (l RateLimit) Limited() bool { return l.PerSecond > 0 }

// MinPerSecond and MaxPerSecond bound a rate limit's PerSecond (0 is no
// limit): at least one attempt in about 17 minutes, at most a million a
// second.
const (
	MinPerSecond = 0.001
	MaxPerSecond = 1_000_000
)

// Validate checks the limit: a PerSecond of 0 or in
// MinPerSecond…MaxPerSecond, Burst not negative, KeyPointer empty or a
// JSON pointer.
func (l RateLimit) Validate() error {
	if math.IsNaN(l.PerSecond) || l.PerSecond < 0 || l.PerSecond > MaxPerSecond || l.PerSecond > 0 && l.PerSecond < MinPerSecond {
		return fmt.Errorf("rate %v per second is not 0 or in %v…%d", l.PerSecond, MinPerSecond, MaxPerSecond)
	}
	if l.Burst < 0 {
		return fmt.Errorf("burst %d is negative", l.Burst)
	}
	return ConcurrencyLimit{KeyPointer: l.KeyPointer}.Validate()
}

// BurstOrDefault is Burst, or 1 when unset.
func (l RateLimit) BurstOrDefault() int { return max(l.Burst, 1) }

// WithRateLimit caps how fast attempts of the activity start.
func (a *Activity[In, Out]) WithRateLimit(l RateLimit) *Activity[In, Out] {
	a.rate = l
	return a
}

// RateLimitedActivities lists the registered activities that declare a
// rate limit, with their limits.
func (r *Registry) RateLimitedActivities() map[string]RateLimit {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]RateLimit{}
	for name, d := range r.activities {
		if d.rate.Limited() {
			out[name] = d.rate
		}
	}
	return out
}
