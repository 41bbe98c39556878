package activity

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Concurrency limits of activities (store/activity_flow.go): a limited
// activity's tasks are never dispatched by the batch that schedules them;
// the activity loop's claim gives each a slot of its key, held until the
// attempt's outcome is recorded.

// Limits are the activity limits in force, sorted by name (none: the
// claim is the one of an engine without limits).
func (a *Attempts) Limits() store.ActivityLimits {
	if !a.d.Reg.HasActivityLimits() {
		return store.ActivityLimits{}
	}
	return ActivityLimits(a.d.Reg.LimitedActivities())
}

// ActivityLimits turns limits by activity name into statement arguments.
func ActivityLimits(limits map[string]harvest.ConcurrencyLimit) store.ActivityLimits {
	var out store.ActivityLimits
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		l := limits[name]
		tokens, _ := harvest.ParsePointer(l.KeyPointer) // checked by Register
		path, _ := json.Marshal(append([]string{}, tokens...))
		out.Names, out.Paths, out.Max = append(out.Names, name), append(out.Paths, string(path)), append(out.Max, int32(l.MaxRunning))
	}
	return out
}

// limitedNames names the limited activities (nil: none).
func (a *Attempts) limitedNames() map[string]bool {
	if !a.d.Reg.HasActivityLimits() {
		return nil
	}
	out := map[string]bool{}
	for name := range a.d.Reg.LimitedActivities() {
		out[name] = true
	}
	return out
}
