package harvest_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// noteSig is the signal the long workflow's side coroutine counts.
var noteSig = harvest.NewSignal[string]("note")

// progress is what the long workflow's "progress" query answers.
type progress struct {
	Step  int `json:"step"`
	Notes int `json:"notes"`
}

// longWF runs n echo steps, sleeping after every third, while a coroutine
// counts "note" signals; the query "progress" reports both counts.
var longWF = harvest.NewWorkflow("long", func(ctx harvest.Context, n int) (progress, error) {
	var p progress
	harvest.SetQueryHandler(ctx, "progress", func(struct{}) (progress, error) { return p, nil })
	harvest.SetQueryHandler(ctx, "sleepy", func(struct{}) (int, error) { return 0, harvest.Sleep(ctx, time.Second) })
	harvest.Go(ctx, func(ctx harvest.Context) {
		for {
			if _, err := noteSig.Receive(ctx); err != nil {
				return
			}
			p.Notes++
		}
	})
	for ; p.Step < n; p.Step++ {
		if _, err := echo.Execute(ctx, strconv.Itoa(p.Step)).Get(ctx); err != nil {
			return p, err
		}
		if p.Step%3 == 0 {
			if err := harvest.Sleep(ctx, time.Second); err != nil {
				return p, err
			}
		}
	}
	return p, nil
})

// deliver appends what the engine would record after the task's
// commands: each activity completes with its input, each timer fires, and
// every other step a note arrives.
func (h *history) deliver(res harvest.TaskResult, step int) {
	for _, c := range res.Commands {
		switch c.Type {
		case harvest.EventActivityScheduled:
			var d harvest.ActivityScheduledData
			require.NoError(h.t, json.Unmarshal(c.Data, &d))
			h.append(harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{ActivityID: d.ActivityID, Output: d.Input}))
		case harvest.EventTimerStarted:
			var d harvest.TimerStartedData
			require.NoError(h.t, json.Unmarshal(c.Data, &d))
			h.append(harvest.NewCommand(harvest.EventTimerFired, harvest.TimerFiredData{TimerID: d.TimerID}))
		}
	}
	if step%2 == 1 {
		h.append(harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{SignalName: "note", Payload: json.RawMessage(`"n"`)}))
	}
}

func TestLiveRun(t *testing.T) {
	t.Parallel()
	reg := harvest.NewRegistry().MustRegister(echo, longWF)
	ctx := context.Background()
	start := func(t *testing.T, h *history) (*harvest.Run, harvest.TaskResult) {
		t.Helper()
		run, res, err := reg.StartRun(ctx, harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
		require.NoError(t, err)
		t.Cleanup(run.Stop)
		return run, res
	}
	// lockstep runs the long workflow to its end, each task both live
	// (Advance over the new events) and by full replay, and requires the
	// same commands; evictAt stops the live run before that task and
	// rebuilds it from the whole history.
	lockstep := func(t *testing.T, n, evictAt int) *history {
		t.Helper()
		h := newHistory(t, reg, "long", n)
		run, live := start(t, h)
		for step := 0; ; step++ {
			replayed, err := reg.RunWorkflowTask(ctx, harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
			require.NoError(t, err)
			require.Equal(t, commandsOf(replayed), commandsOf(live), "task %d", step)
			require.Equal(t, replayed.Closed, live.Closed)
			seen := len(h.events)
			h.append(live.Commands...)
			if live.Closed {
				return h
			}
			h.deliver(live, step)
			if step == evictAt {
				run.Stop()
				run, live = start(t, h)
				continue
			}
			live, err = run.Advance(ctx, h.events[seen:])
			require.NoError(t, err)
		}
	}

	t.Run("AgreesWithReplay", func(t *testing.T) {
		t.Parallel()
		h := lockstep(t, 20, -1)
		require.Equal(t, harvest.EventWorkflowCompleted, h.events[len(h.events)-1].Type)
	})

	t.Run("AgreesAfterEvictionMidRun", func(t *testing.T) {
		t.Parallel()
		a, b := lockstep(t, 12, -1), lockstep(t, 12, 5)
		require.Equal(t, commandEvents(a.events), commandEvents(b.events))
	})

	t.Run("StaleEventsAreRefused", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, reg, "long", 3)
		run, res := start(t, h)
		require.Equal(t, harvest.EventActivityScheduled, res.Commands[0].Type)
		// The task's writes were lost: the completion arrives without them.
		h.deliver(res, 0)
		_, err := run.Advance(ctx, h.events[1:])
		require.ErrorIs(t, err, harvest.ErrStaleRun)
		_, err = run.Advance(ctx, h.events[1:])
		require.ErrorIs(t, err, harvest.ErrStaleRun, "a failed run stays stopped")
	})

	t.Run("QueryOnLiveState", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, reg, "long", 6)
		run, live := start(t, h)
		for step := range 3 {
			seen := len(h.events)
			h.append(live.Commands...)
			h.deliver(live, step)
			var err error
			live, err = run.Advance(ctx, h.events[seen:])
			require.NoError(t, err)
		}
		got, err := run.Query("progress", nil)
		require.NoError(t, err)
		want, err := reg.RunQuery(ctx, harvest.WorkflowTask{Info: h.info, History: append(h.events, eventsOf(live.Commands, len(h.events))...)}, "progress", nil)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(got))
		require.JSONEq(t, `{"step":2,"notes":1}`, string(got))
		_, err = run.Query("nope", nil)
		require.ErrorIs(t, err, harvest.ErrUnknownQuery)
		require.False(t, run.Stopped())
		// A handler that issues a command moved the run's command ids: the
		// run must be rebuilt.
		_, err = run.Query("sleepy", nil)
		require.ErrorIs(t, err, harvest.ErrQueryCommand)
		require.True(t, run.Stopped())
		_, err = run.Advance(ctx, eventsOf(live.Commands, len(h.events)))
		require.ErrorIs(t, err, harvest.ErrStaleRun)
	})

	t.Run("NonDeterminismShowsWhenRebuilt", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, reg, "long", 4)
		run, live := start(t, h)
		h.append(live.Commands...)
		h.deliver(live, 0)
		// The next deployment changed the code: live, the old code goes on;
		// rebuilt from the history, the new code must fail.
		changed := harvest.NewRegistry().MustRegister(echo, harvest.NewWorkflow("long", func(ctx harvest.Context, n int) (progress, error) {
			return progress{}, harvest.Sleep(ctx, time.Hour)
		}))
		_, _, err := changed.StartRun(ctx, harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
		require.ErrorIs(t, err, harvest.ErrNonDeterminism)
		_, err = run.Advance(ctx, h.events[1:])
		require.NoError(t, err)
	})

}

// TestLiveRunStepIsBounded checks that ctx bounds a step of a live run
// as it bounds a replay: code that does not yield fails the step.
func TestLiveRunStepIsBounded(t *testing.T) {
	t.Parallel()
	var release atomic.Bool
	spin := harvest.NewWorkflow("spin", func(ctx harvest.Context, _ struct{}) (int, error) {
		if _, err := noteSig.Receive(ctx); err != nil {
			return 0, err
		}
		n := 0
		for !release.Load() {
			n++
		}
		return n, nil
	})
	reg := harvest.NewRegistry().MustRegister(spin)
	h := newHistory(t, reg, "spin", struct{}{})
	run, _, err := reg.StartRun(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
	require.NoError(t, err)
	defer release.Store(true)
	h.append(harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{SignalName: "note", Payload: json.RawMessage(`"n"`)}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = run.Advance(ctx, h.events[1:])
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.True(t, run.Stopped())
}

// TestLiveRunStopEndsCoroutines runs alone (not parallel): it counts the
// process's goroutines.
func TestLiveRunStopEndsCoroutines(t *testing.T) {
	reg := harvest.NewRegistry().MustRegister(echo, longWF)
	runs := make([]*harvest.Run, 50)
	busy := harvest.ParkedCoroutines
	before := busy()
	for i := range runs {
		h := newHistory(t, reg, "long", 5)
		run, _, err := reg.StartRun(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
		require.NoError(t, err)
		runs[i] = run
	}
	require.GreaterOrEqual(t, busy(), before+2*len(runs), "each live run parks two coroutines")
	for _, run := range runs {
		run.Stop()
		run.Stop()
	}
	deadline := time.Now().Add(5 * time.Second)
	for busy() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	require.LessOrEqual(t, busy(), before, "goroutines left after Stop")
}

// commandsOf is the commands' types and data, as comparable values.
func commandsOf(res harvest.TaskResult) []string {
	out := make([]string, len(res.Commands))
	for i, c := range res.Commands {
		out[i] = string(c.Type) + " " + string(c.Data)
	}
	return out
}

// commandEvents is the command events of a history, as comparable values.
func commandEvents(events []harvest.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Type.IsCommand() {
			out = append(out, string(ev.Type)+" "+string(ev.Data))
		}
	}
	return out
}

// eventsOf is cmds as the events they become from event id next on.
func eventsOf(cmds []harvest.Command, next int) []harvest.Event {
	out := make([]harvest.Event, len(cmds))
	for i, c := range cmds {
		out[i] = harvest.Event{EventID: int64(next + i), Type: c.Type, Data: c.Data}
	}
	return out
}
