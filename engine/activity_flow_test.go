package engine

import (
	"fmt"
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
	})
}
