package flowlimit_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/flowlimit"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	wf := func(mutate func(*flowlimit.Limit)) flowlimit.Limit {
		l := flowlimit.Limit{Kind: flowlimit.Workflow, Name: "report", MaxRunning: 2, KeyPointer: "/customer"}
		mutate(&l)
		return l
	}
	act := func(mutate func(*flowlimit.Limit)) flowlimit.Limit {
		l := flowlimit.Limit{Kind: flowlimit.Activity, Name: "charge", MaxRunning: 1, KeyPointer: "/provider",
			PerSecond: 50, Burst: 5, RateKeyPointer: "/provider"}
		mutate(&l)
		return l
	}
	same := func(*flowlimit.Limit) {}
	for _, c := range []struct {
		name  string
		limit flowlimit.Limit
		err   string // "" when valid
	}{
		{"Workflow", wf(same), ""},
		{"Activity", act(same), ""},
		{"WorkflowLift", flowlimit.Limit{Kind: flowlimit.Workflow, Name: "report"}, ""},
		{"ActivityLift", flowlimit.Limit{Kind: flowlimit.Activity, Name: "charge"}, ""},
		{"ActivityRateOnly", flowlimit.Limit{Kind: flowlimit.Activity, Name: "charge", PerSecond: 0.5}, ""},
		{"Bounds", act(func(l *flowlimit.Limit) { l.MaxRunning, l.PerSecond, l.Burst = 1_000_000, 1_000_000, 1_000_000 }), ""},
		{"EscapedPointer", wf(func(l *flowlimit.Limit) { l.KeyPointer = "/a~1b/~0c" }), ""},
		{"UnicodeName", wf(func(l *flowlimit.Limit) { l.Name = "rapport-été" }), ""},
		{"NoKind", wf(func(l *flowlimit.Limit) { l.Kind = "" }), "kind"},
		{"UnknownKind", wf(func(l *flowlimit.Limit) { l.Kind = "shard" }), "kind"},
		{"EmptyName", wf(func(l *flowlimit.Limit) { l.Name = "" }), "name"},
		{"LongName", wf(func(l *flowlimit.Limit) { l.Name = strings.Repeat("n", 257) }), "name"},
		{"NULInName", wf(func(l *flowlimit.Limit) { l.Name = "a\x00b" }), "name"},
		{"InvalidUTF8Name", wf(func(l *flowlimit.Limit) { l.Name = "a\xffb" }), "name"},
		{"SlashInName", wf(func(l *flowlimit.Limit) { l.Name = "a/b" }), "name"},
		{"NegativeMaxRunning", wf(func(l *flowlimit.Limit) { l.MaxRunning = -1 }), "max_running"},
		{"HugeMaxRunning", wf(func(l *flowlimit.Limit) { l.MaxRunning = math.MaxInt32 + 1 }), "max_running"},
		{"PointerNotAPointer", wf(func(l *flowlimit.Limit) { l.KeyPointer = "customer" }), "JSON pointer"},
		{"PointerBadEscape", wf(func(l *flowlimit.Limit) { l.KeyPointer = "/a~2" }), "~"},
		{"PointerNUL", wf(func(l *flowlimit.Limit) { l.KeyPointer = "/a\x00" }), "key_pointer"},
		{"PointerInvalidUTF8", wf(func(l *flowlimit.Limit) { l.KeyPointer = "/\xff" }), "key_pointer"},
		{"PointerTooLong", wf(func(l *flowlimit.Limit) { l.KeyPointer = "/" + strings.Repeat("p", 1024) }), "key_pointer"},
		{"PointerWithoutMaxRunning", wf(func(l *flowlimit.Limit) { l.MaxRunning = 0 }), "key_pointer needs"},
		{"WorkflowRate", wf(func(l *flowlimit.Limit) { l.PerSecond = 1 }), "not workflows"},
		{"WorkflowBurst", wf(func(l *flowlimit.Limit) { l.Burst = 1 }), "not workflows"},
		{"WorkflowRatePointer", wf(func(l *flowlimit.Limit) { l.RateKeyPointer = "/x" }), "not workflows"},
		{"NaNRate", act(func(l *flowlimit.Limit) { l.PerSecond = math.NaN() }), "rate"},
		{"InfiniteRate", act(func(l *flowlimit.Limit) { l.PerSecond = math.Inf(1) }), "rate"},
		{"NegativeRate", act(func(l *flowlimit.Limit) { l.PerSecond = -1 }), "rate"},
		{"HugeRate", act(func(l *flowlimit.Limit) { l.PerSecond = harvest.MaxPerSecond + 1 }), "rate"},
		{"NegativeBurst", act(func(l *flowlimit.Limit) { l.Burst = -1 }), "burst"},
		{"HugeBurst", act(func(l *flowlimit.Limit) { l.Burst = 1_000_001 }), "burst"},
		{"BurstWithoutRate", act(func(l *flowlimit.Limit) { l.PerSecond, l.RateKeyPointer = 0, "" }), "need a per_second"},
		{"RatePointerWithoutRate", act(func(l *flowlimit.Limit) { l.PerSecond, l.Burst = 0, 0 }), "need a per_second"},
		{"RatePointerNotAPointer", act(func(l *flowlimit.Limit) { l.RateKeyPointer = "provider" }), "JSON pointer"},
		{"RatePointerNUL", act(func(l *flowlimit.Limit) { l.RateKeyPointer = "/\x00" }), "rate_key_pointer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.limit.Validate()
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, flowlimit.ErrInvalid)
			require.ErrorContains(t, err, c.err)
		})
	}
}

func TestLimitParts(t *testing.T) {
	t.Parallel()
	l := flowlimit.Limit{Kind: flowlimit.Activity, Name: "charge", MaxRunning: 3, KeyPointer: "/a",
		PerSecond: 2.5, Burst: 4, RateKeyPointer: "/b", UpdatedAt: time.Unix(1, 0)}
	require.Equal(t, "activity/charge", l.Key())
	require.Equal(t, harvest.ConcurrencyLimit{MaxRunning: 3, KeyPointer: "/a"}, l.Concurrency())
	require.Equal(t, harvest.RateLimit{PerSecond: 2.5, Burst: 4, KeyPointer: "/b"}, l.Rate())

	later := l
	later.UpdatedAt = time.Unix(2, 0)
	require.True(t, l.Same(later), "UpdatedAt aside")
	other := l
	other.Burst = 5
	require.False(t, l.Same(other))

	m := map[string]flowlimit.Limit{}
	for _, x := range []flowlimit.Limit{{Kind: flowlimit.Workflow, Name: "b"}, {Kind: flowlimit.Workflow, Name: "a"}, {Kind: flowlimit.Activity, Name: "z"}} {
		m[x.Key()] = x
	}
	var keys []string
	for _, x := range flowlimit.Sorted(m) {
		keys = append(keys, x.Key())
	}
	require.Equal(t, []string{"activity/z", "workflow/a", "workflow/b"}, keys)
}
