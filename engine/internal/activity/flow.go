package activity

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Concurrency and rate limits of activities (store/activity_flow.go): a
// limited activity's tasks are never dispatched by the batch that
// schedules them; the activity loop's claim gives each a slot of its key,
// held until the attempt's outcome is recorded, and a token of its
// bucket.

// Limits are the activity limits in force, sorted by name (none: the
// claim is the one of an engine without limits).
func (a *Attempts) Limits() store.ActivityLimits {
	if !a.d.Limits.AnyActivity() {
		return store.ActivityLimits{}
	}
	names, conc, rate := a.d.Limits.ActivityNames()
	return activityLimits(names, conc, rate)
}

// ConcurrencyLimits are the activities' concurrency limits alone (what
// GET /flow shows occupancy of).
func (a *Attempts) ConcurrencyLimits() store.ActivityLimits {
	if !a.d.Limits.AnyActivity() {
		return store.ActivityLimits{}
	}
	conc := a.d.Limits.Activities()
	return activityLimits(slices.Sorted(maps.Keys(conc)), conc, nil)
}

// activityLimits turns the limits of names into statement arguments.
func activityLimits(names []string, conc map[string]harvest.ConcurrencyLimit, rate map[string]harvest.RateLimit) store.ActivityLimits {
	var out store.ActivityLimits
	for _, name := range names {
		c, r := conc[name], rate[name]
		out.Names, out.Max = append(out.Names, name), append(out.Max, int32(c.MaxRunning))
		out.Paths, out.RatePaths = append(out.Paths, pathJSON(c.KeyPointer)), append(out.RatePaths, pathJSON(r.KeyPointer))
		out.Rate, out.Burst = append(out.Rate, r.PerSecond), append(out.Burst, float64(r.BurstOrDefault()))
	}
	return out
}

// pathJSON is the JSON array of a pointer's reference tokens (checked by
// Register).
func pathJSON(pointer string) string {
	tokens, _ := harvest.ParsePointer(pointer)
	return store.PointerPath(tokens)
}

// limitedNames names the limited activities (nil: none).
func (a *Attempts) limitedNames() map[string]bool {
	if !a.d.Limits.AnyActivity() {
		return nil
	}
	names, _, _ := a.d.Limits.ActivityNames()
	out := make(map[string]bool, len(names))
	for _, name := range names {
		out[name] = true
	}
	return out
}

// minTokenWait is the shortest wait for a token the loop arms.
const minTokenWait = 5 * time.Millisecond

// watchTokens arms the loop's wake-up for the next token of the fastest
// rate of lim when, after a claim, tasks of rate-limited activities are
// due and unclaimed (waiting for tokens, or for slots).
func (a *Attempts) watchTokens(ctx context.Context, tx *fence.Tx, lim store.ActivityLimits) error {
	var (
		names   []string
		fastest float64
	)
	for i, r := range lim.Rate {
		if r > 0 {
			names, fastest = append(names, lim.Names[i]), max(fastest, r)
		}
	}
	if len(names) == 0 {
		return nil
	}
	waiting, err := store.AnyDueOf(ctx, tx, names, tx.Ahead().Microseconds())
	if err != nil || !waiting {
		return err
	}
	a.retryWake.After(max(minTokenWait, min(a.d.Poll, time.Duration(float64(time.Second)/fastest))))
	return nil
}
