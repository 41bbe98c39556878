package harvest_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

var (
	echo = harvest.NewActivity("echo", func(_ *harvest.ActivityContext, s string) (string, error) { return s, nil })

	// race selects over the "approved" signal, a day's timer and an activity.
	race = harvest.NewWorkflow("race", func(ctx harvest.Context, _ struct{}) (string, error) {
		var won string
		act := echo.Execute(ctx, "act")
		harvest.NewSelector(ctx).
			AddReceive(approved, func() { v, _ := approved.Receive(ctx); won = "signal:" + v }).
			AddFuture(harvest.NewTimer(ctx, 24*time.Hour), func() { won = "timer" }).
			AddFuture(act, func() { v, _ := act.Get(ctx); won = "activity:" + v }).
			Select(ctx)
		return won, nil
	})

	// both selects twice over two activities: the order they fire in.
	both = harvest.NewWorkflow("both", func(ctx harvest.Context, _ struct{}) ([]string, error) {
		var order []string
		a, b := echo.Execute(ctx, "a"), echo.Execute(ctx, "b")
		sel := harvest.NewSelector(ctx).
			AddFuture(a, func() { order = append(order, "a") }).
			AddFuture(b, func() { order = append(order, "b") })
		sel.Select(ctx)
		sel.Select(ctx)
		return order, nil
	})

	// twice receives one signal by select, then the next by Receive.
	twice = harvest.NewWorkflow("twice", func(ctx harvest.Context, _ struct{}) ([]string, error) {
		var got []string
		harvest.NewSelector(ctx).
			AddReceive(approved, func() { v, _ := approved.Receive(ctx); got = append(got, v) }).
			Select(ctx)
		v, err := approved.Receive(ctx)
		return append(got, v), err
	})

	// fanOut runs ten activities, each from a coroutine of its own, and
	// collects their results over a channel, in completion order.
	fanOut = harvest.NewWorkflow("fan_out", func(ctx harvest.Context, n int) ([]string, error) {
		results := harvest.NewChannel[string](ctx)
		for i := range n {
			harvest.Go(ctx, func(ctx harvest.Context) {
				v, _ := echo.Execute(ctx, fmt.Sprint(i)).Get(ctx)
				results.Send(ctx, v)
			})
		}
		var out []string
		for range n {
			v, _ := results.Receive(ctx)
			out = append(out, v)
		}
		return out, nil
	})
)

func selectRegistry() *harvest.Registry {
	return harvest.NewRegistry().MustRegister(echo, race, both, twice, fanOut)
}

func completed(id, out string) harvest.Command {
	return harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{ActivityID: id, Output: json.RawMessage(`"` + out + `"`)})
}

func signaled(v string) harvest.Command {
	return harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{SignalName: "approved", Payload: json.RawMessage(`"` + v + `"`)})
}

func timerFired(id string) harvest.Command {
	return harvest.NewCommand(harvest.EventTimerFired, harvest.TimerFiredData{TimerID: id})
}

// output is the JSON output of the closing command of res.
func output(t *testing.T, res harvest.TaskResult) string {
	t.Helper()
	require.True(t, res.Closed)
	return string(data[harvest.WorkflowCompletedData](t, res.Commands[len(res.Commands)-1]).Output)
}

// replayed runs a task over the whole closed history: nothing new, no error.
func replayed(t *testing.T, h *history) {
	t.Helper()
	for range 2 {
		res, err := h.task()
		require.NoError(t, err, "replay of the recorded history")
		require.Empty(t, res.Commands)
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()

	t.Run("EachCaseWinsOnItsOwn", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name  string
			event harvest.Command
			want  string
		}{
			{"Signal", signaled("ok"), `"signal:ok"`},
			{"Timer", timerFired("2"), `"timer"`},
			{"Activity", completed("1", "act"), `"activity:act"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHistory(t, selectRegistry(), "race", struct{}{})
				require.Len(t, h.mustTask().Commands, 2, "the activity, then the timer")
				h.append(tc.event)
				require.JSONEq(t, tc.want, output(t, h.mustTask()))
				replayed(t, h)
			})
		}
	})

	t.Run("TwoReadyAtOnceTheFirstInHistoryWins", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			events []harvest.Command
			want   string
		}{
			{"TimerThenSignal", []harvest.Command{timerFired("2"), signaled("late")}, `"timer"`},
			{"SignalThenTimer", []harvest.Command{signaled("early"), timerFired("2")}, `"signal:early"`},
			{"ActivityThenSignal", []harvest.Command{completed("1", "act"), signaled("late")}, `"activity:act"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHistory(t, selectRegistry(), "race", struct{}{})
				h.mustTask()
				h.append(tc.events...)
				require.JSONEq(t, tc.want, output(t, h.mustTask()))
				replayed(t, h)
			})
		}
	})

	t.Run("BothResolvedBeforeSelectFireInHistoryOrder", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			events []harvest.Command
			want   string
		}{
			{"BFirst", []harvest.Command{completed("2", "b"), completed("1", "a")}, `["b","a"]`},
			{"AFirst", []harvest.Command{completed("1", "a"), completed("2", "b")}, `["a","b"]`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHistory(t, selectRegistry(), "both", struct{}{})
				require.Len(t, h.mustTask().Commands, 2)
				h.append(tc.events...)
				require.JSONEq(t, tc.want, output(t, h.mustTask()), "each future case fires once")
				replayed(t, h)
			})
		}
	})

	t.Run("AReceiveCaseConsumesOneSignal", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, selectRegistry(), "twice", struct{}{})
		h.append(signaled("one"), signaled("two"))
		require.JSONEq(t, `["one","two"]`, output(t, h.mustTask()))
		replayed(t, h)
	})

	t.Run("ANotChosenCaseStaysPending", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, selectRegistry(), "both", struct{}{})
		h.mustTask()
		h.append(completed("2", "b"))
		require.Empty(t, h.mustTask().Commands, "the first select fired, the second waits")
		h.append(completed("1", "a"))
		require.JSONEq(t, `["b","a"]`, output(t, h.mustTask()))
		replayed(t, h)
	})
}

func TestCoroutines(t *testing.T) {
	t.Parallel()

	t.Run("FanOutIsDeterministicAcrossReplays", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, selectRegistry(), "fan_out", 10)
		res := h.mustTask()
		require.Len(t, res.Commands, 10, "every coroutine scheduled its activity")
		for i, c := range res.Commands {
			d := data[harvest.ActivityScheduledData](t, c)
			require.Equal(t, fmt.Sprint(i+1), d.ActivityID, "ids follow creation order")
			require.JSONEq(t, fmt.Sprintf(`"%d"`, i), string(d.Input))
		}
		for i := 10; i >= 1; i -= 2 { // complete in an order of our own, two per task
			h.append(completed(fmt.Sprint(i), fmt.Sprint(i-1)), completed(fmt.Sprint(i-1), fmt.Sprint(i-2)))
			res = h.mustTask()
		}
		require.JSONEq(t, `["9","8","7","6","5","4","3","2","1","0"]`, output(t, res), "completion order")
		replayed(t, h)
	})
}
