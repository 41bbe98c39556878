package harvest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// chanRun runs fn as a workflow to completion in one task and returns its
// trace; the history then replays twice.
func chanRun(t *testing.T, fn func(ctx harvest.Context, trace func(string))) string {
	t.Helper()
	wf := harvest.NewWorkflow("chan", func(ctx harvest.Context, _ struct{}) ([]string, error) {
		var out []string
		fn(ctx, func(s string) { out = append(out, s) })
		return out, nil
	})
	h := newHistory(t, harvest.NewRegistry().MustRegister(wf), "chan", struct{}{})
	got := output(t, h.mustTask())
	replayed(t, h)
	return got
}

func TestChannel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(ctx harvest.Context, trace func(string))
		want string
	}{
		{"UnbufferedSendWaitsForTheReceiver", func(ctx harvest.Context, trace func(string)) {
			c := harvest.NewChannel[int](ctx)
			harvest.Go(ctx, func(ctx harvest.Context) {
				trace("sending")
				c.Send(ctx, 1)
				trace("sent")
				c.Close()
			})
			for range 2 {
				v, ok := c.Receive(ctx)
				trace(fmt.Sprint(v, ok))
			}
		}, `["sending","1 true","sent","0 false"]`},
		{"BufferedSendBlocksWhenFull", func(ctx harvest.Context, trace func(string)) {
			c := harvest.NewBufferedChannel[int](ctx, 2)
			harvest.Go(ctx, func(ctx harvest.Context) {
				for i := range 3 {
					c.Send(ctx, i)
					trace(fmt.Sprint("sent ", i))
				}
			})
			v, _ := c.Receive(ctx)
			trace(fmt.Sprint("got ", v, " len ", c.Len()))
		}, `["sent 0","sent 1","got 0 len 2"]`},
		{"CloseDrainsThenReportsClosed", func(ctx harvest.Context, trace func(string)) {
			c := harvest.NewBufferedChannel[string](ctx, 1)
			c.Send(ctx, "last")
			c.Close()
			for range 2 {
				v, ok := c.Receive(ctx)
				trace(fmt.Sprintf("%q %v", v, ok))
			}
		}, `["\"last\" true","\"\" false"]`},
		{"ReceiveAsyncDoesNotBlock", func(ctx harvest.Context, trace func(string)) {
			c := harvest.NewBufferedChannel[int](ctx, 1)
			_, ok := c.ReceiveAsync()
			c.Send(ctx, 7)
			v, ok2 := c.ReceiveAsync()
			trace(fmt.Sprint(ok, v, ok2))
		}, `["false 7 true"]`},
		{"SelectTakesTheEarliestSend", func(ctx harvest.Context, trace func(string)) {
			a, b := harvest.NewBufferedChannel[string](ctx, 1), harvest.NewBufferedChannel[string](ctx, 1)
			b.Send(ctx, "b")
			a.Send(ctx, "a")
			sel := harvest.NewSelector(ctx).
				AddReceive(a, func() { v, _ := a.Receive(ctx); trace(v) }).
				AddReceive(b, func() { v, _ := b.Receive(ctx); trace(v) }).
				AddDefault(func() { trace("default") })
			for range 3 {
				sel.Select(ctx)
			}
		}, `["b","a","default"]`},
		{"SelectWaitsForACoroutine", func(ctx harvest.Context, trace func(string)) {
			c := harvest.NewChannel[string](ctx)
			harvest.Go(ctx, func(ctx harvest.Context) { c.Send(ctx, "from coroutine") })
			harvest.NewSelector(ctx).AddReceive(c, func() { v, _ := c.Receive(ctx); trace(v) }).Select(ctx)
		}, `["from coroutine"]`},
		{"CoroutinesRunInCreationOrder", func(ctx harvest.Context, trace func(string)) {
			done := harvest.NewBufferedChannel[struct{}](ctx, 3)
			for i := range 3 {
				harvest.Go(ctx, func(ctx harvest.Context) { trace(fmt.Sprint("co ", i)); done.Send(ctx, struct{}{}) })
			}
			trace("main")
			for range 3 {
				done.Receive(ctx)
			}
		}, `["main","co 0","co 1","co 2"]`},
		{"OthersAreAbandonedWhenMainReturns", func(ctx harvest.Context, trace func(string)) {
			c := harvest.NewChannel[int](ctx)
			harvest.Go(ctx, func(ctx harvest.Context) { c.Receive(ctx); trace("never") })
			harvest.Go(ctx, func(ctx harvest.Context) { trace("never started") })
			trace("main returns")
		}, `["main returns"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.JSONEq(t, tc.want, chanRun(t, tc.fn))
		})
	}
}

func TestCoroutinePanicFailsTheTask(t *testing.T) {
	t.Parallel()
	wf := harvest.NewWorkflow("boom", func(ctx harvest.Context, _ struct{}) (int, error) {
		harvest.Go(ctx, func(harvest.Context) { panic("coroutine boom") })
		return 0, harvest.Sleep(ctx, time.Minute)
	})
	h := newHistory(t, harvest.NewRegistry().MustRegister(wf), "boom", struct{}{})
	_, err := h.task()
	var pe *harvest.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "coroutine boom", pe.Value)
}
