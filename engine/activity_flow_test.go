package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// provider is a fake downstream provider that records, per key, how many calls it
// serves at once, and the most it ever served.
type provider struct {
	mu     sync.Mutex
	inside map[string]int
	most   map[string]int
	calls  int
	// entered gets each call's key as it enters (nil: not watched).
	entered chan string
}

func newProvider() *provider {
	return &provider{inside: map[string]int{}, most: map[string]int{}}
}

// call serves one call of key, which lasts until hold ends.
func (d *provider) call(key string, hold <-chan struct{}) {
	d.mu.Lock()
	d.inside[key]++
	d.most[key] = max(d.most[key], d.inside[key])
	d.calls++
	d.mu.Unlock()
	if d.entered != nil {
		d.entered <- key
	}
	<-hold
	d.mu.Lock()
	d.inside[key]--
	d.mu.Unlock()
}

// mostAtOnce is the most calls of each key served at once.
func (d *provider) mostAtOnce() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, n := range d.most {
		out[k] = n
	}
	return out
}

type chargeInput struct {
	Provider string `json:"provider"`
	N        int    `json:"n"`
}

// setupChargeFlow registers charge_limited (one attempt at a time per
// provider, each a call of d that lasts work, or until release is closed
// or the attempt's context ends) and pay (a workflow that runs it once),
// and makes an engine.
func setupChargeFlow(t *testing.T, d *provider, work time.Duration, release <-chan struct{}) (*testBundle, *Engine) {
	t.Helper()
	b := setup(t)
	charge := harvest.NewActivity("charge_limited", func(ctx *harvest.ActivityContext, in chargeInput) (int, error) {
		hold := make(chan struct{})
		go func() {
			defer close(hold)
			select {
			case <-time.After(work):
			case <-release:
			case <-ctx.Done():
			}
		}()
		d.call(in.Provider, hold)
		return in.N, ctx.Err()
	}, harvest.ActivityOptions{StartToClose: time.Minute}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1, KeyPointer: "/provider"})
	pay := harvest.NewWorkflow("pay", func(ctx harvest.Context, in chargeInput) (int, error) {
		return charge.Execute(ctx, in).Get(ctx)
	})
	require.NoError(t, b.reg.Register(charge, pay))
	return b, b.engine(t)
}

func TestActivityConcurrencyLimit(t *testing.T) {
	t.Parallel()

	t.Run("AttemptsOfOneKeyNeverOverlap", func(t *testing.T) {
		t.Parallel()
		d := newProvider()
		_, e := setupChargeFlow(t, d, 5*time.Millisecond, nil)
		var ids []uuid.UUID
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := start(t, e, StartRequest{WorkflowName: "pay", Input: raw(t, chargeInput{Provider: fmt.Sprint("p", i%2), N: i})})
				mu.Lock()
				ids = append(ids, res.ExecutionID)
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, id := range ids {
			require.Equal(t, StateCompleted, waitClosed(t, e, id).State)
		}
		require.Equal(t, map[string]int{"p0": 1, "p1": 1}, d.mostAtOnce(), "one call per provider at a time, both providers served")
		require.Equal(t, 20, d.calls)
		slots := completedSlots(t, e, ids)
		require.Len(t, slots, 20, "every completion records the slot its attempt held")
		requireNoOverlap(t, slots)
	})

	t.Run("AKilledOwnerNeitherLeaksNorDoublesASlot", func(t *testing.T) {
		t.Parallel()
		d := newProvider()
		d.entered = make(chan string, 16)
		release := make(chan struct{})
		b, e1 := setupChargeFlow(t, d, time.Hour, release) // the first attempt lasts until the kill
		ids := []uuid.UUID{
			start(t, e1, StartRequest{WorkflowName: "pay", Input: raw(t, chargeInput{Provider: "x", N: 1})}).ExecutionID,
			start(t, e1, StartRequest{WorkflowName: "pay", Input: raw(t, chargeInput{Provider: "x", N: 2})}).ExecutionID,
		}
		<-d.entered // one attempt is in the provider; the other waits for the slot
		st, err := e1.FlowStatus(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, []ActivityOccupancy{{ActivityName: "charge_limited", Key: "x", Running: 1, Waiting: 1}}, st.Activities)
		killedAt := time.Now()
		crash(e1)
		e2 := b.engine(t)
		require.Equal(t, "x", <-d.entered, "the killed attempt is tried again, in its slot")
		close(release)
		for i, id := range ids {
			x := waitClosed(t, e2, id)
			require.Equal(t, StateCompleted, x.State)
			require.JSONEq(t, fmt.Sprint(i+1), string(x.Output))
		}
		require.Equal(t, map[string]int{"x": 1}, d.mostAtOnce(), "never two attempts in the provider")
		slots := completedSlots(t, e2, ids)
		require.Len(t, slots, 2)
		requireNoOverlap(t, slots)
		sort.Slice(slots, func(i, j int) bool { return slots[i].Since.Before(slots[j].Since) })
		require.True(t, slots[0].Since.Before(killedAt), "the killed attempt's retry holds the slot taken before the kill: %+v", slots[0])
	})
}

// completedSlots reads the slots the runs' ActivityCompleted events
// record.
func completedSlots(t *testing.T, e *Engine, ids []uuid.UUID) []harvest.ActivitySlot {
	t.Helper()
	var out []harvest.ActivitySlot
	for _, id := range ids {
		h, err := e.History(ctxT(t), id, HistoryQuery{After: -1, Types: []string{string(harvest.EventActivityCompleted)}})
		require.NoError(t, err)
		for _, ev := range h.Events {
			var d harvest.ActivityCompletedData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			if d.Slot != nil {
				out = append(out, *d.Slot)
			}
		}
	}
	return out
}

// requireNoOverlap fails when two slots of one key were held at once.
func requireNoOverlap(t *testing.T, slots []harvest.ActivitySlot) {
	t.Helper()
	byKey := map[string][]harvest.ActivitySlot{}
	for _, s := range slots {
		require.False(t, s.Until.Before(s.Since), "a slot is given back after it is taken: %+v", s)
		byKey[s.Key] = append(byKey[s.Key], s)
	}
	for key, ss := range byKey {
		sort.Slice(ss, func(i, j int) bool { return ss[i].Since.Before(ss[j].Since) })
		for i := 1; i < len(ss); i++ {
			require.False(t, ss[i].Since.Before(ss[i-1].Until), "key %q: slot %+v taken before %+v was given back", key, ss[i], ss[i-1])
		}
	}
}

// startTimes records when each call of a fake provider began.
type startTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (s *startTimes) add() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Now())
}

func (s *startTimes) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}

// within counts the calls that began in [from, from+d).
func (s *startTimes) within(from time.Time, d time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.at {
		if !t.Before(from) && t.Before(from.Add(d)) {
			n++
		}
	}
	return n
}

// first is the time the i-th call began.
func (s *startTimes) first(i int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[i]
}

// setupPaced registers paced (an activity under lim, each attempt a call
// that starts records) and pace (a workflow that runs it n times in a
// row), and makes an engine.
func setupPaced(t testing.TB, lim harvest.RateLimit, starts *startTimes) (*testBundle, *Engine) {
	t.Helper()
	b := setup(t)
	paced := harvest.NewActivity("paced", func(_ *harvest.ActivityContext, i int) (int, error) {
		starts.add()
		return i, nil
	}).WithRateLimit(lim)
	pace := harvest.NewWorkflow("pace", func(ctx harvest.Context, n int) (int, error) {
		for i := range n {
			if _, err := paced.Execute(ctx, i).Get(ctx); err != nil {
				return i, err
			}
		}
		return n, nil
	})
	require.NoError(t, b.reg.Register(paced, pace))
	return b, b.engine(t)
}

// waitStarts polls until starts has recorded n calls.
func waitStarts(t testing.TB, starts *startTimes, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for starts.len() < n {
		require.True(t, time.Now().Before(deadline), "only %d of %d calls in %s", starts.len(), n, within)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestActivityRateLimit(t *testing.T) {
	t.Parallel()

	t.Run("NeverFasterThanTheRate", func(t *testing.T) {
		t.Parallel()
		starts := &startTimes{}
		_, e := setupPaced(t, harvest.RateLimit{PerSecond: 50, Burst: 5}, starts)
		for range 10 {
			start(t, e, StartRequest{WorkflowName: "pace", Input: raw(t, 60)}) // 600 calls: 12 s at the rate
		}
		waitStarts(t, starts, 5+500+1, time.Minute)
		from := starts.first(5) // after the first burst
		n := starts.within(from, 10*time.Second)
		t.Logf("%d calls in the 10 s after the burst", n)
		// How close to the rate it comes is BenchmarkActivityRateLimit's
		// figure: a test's machine may be too busy to keep up.
		require.LessOrEqual(t, n, 500+5, "never faster than the rate (plus one burst)")
	})

	t.Run("ARestartResumesTheBucketWithoutAFreshBurst", func(t *testing.T) {
		t.Parallel()
		starts := &startTimes{}
		b, e1 := setupPaced(t, harvest.RateLimit{PerSecond: 1, Burst: 10}, starts)
		// The bucket is made full at the first claim, which comes after
		// this: the clock both sides read (PostgreSQL's now() and ours)
		// is the machine's.
		before := time.Now()
		burst := start(t, e1, StartRequest{WorkflowName: "pace", Input: raw(t, 10)})
		// The burst empties the bucket. Its run closes first: an attempt
		// the crash cut short would be tried again in its slot, with no
		// new token (a call the bound below does not count on).
		require.Equal(t, StateCompleted, waitClosed(t, e1, burst.ExecutionID).State)
		crash(e1)
		e2 := b.engine(t)
		restarted := time.Now()
		start(t, e2, StartRequest{WorkflowName: "pace", Input: raw(t, 3)})
		waitStarts(t, starts, 13, 30*time.Second)
		// The bucket held 10 tokens at the first claim and gains one a
		// second: the thirteenth claim, and so its call, comes at least
		// three seconds after the first claim, so after before, however
		// late any call began after its claim. A bucket reset by the
		// restart would have let the last three in at once, as soon as
		// the new engine claimed them.
		t.Logf("burst and restart took %s", restarted.Sub(before))
		require.GreaterOrEqual(t, starts.first(12).Sub(before), 3*time.Second,
			"thirteen calls at 1 a second with a burst of 10, across a restart")
	})
}
