package harvesttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

var (
	echo = harvest.NewActivity("echo", func(_ *harvest.ActivityContext, s string) (string, error) { return s, nil })

	// lateRace starts an activity, sleeps an hour, then selects between the
	// activity and a signal, both ready by then, and sleeps again so that
	// a later workflow task replays the select.
	lateRace = harvest.NewWorkflow("late_race", func(ctx harvest.Context, _ string) (string, error) {
		act := echo.Execute(ctx, "activity")
		if err := harvest.Sleep(ctx, time.Hour); err != nil {
			return "", err
		}
		var won string
		harvest.NewSelector(ctx).
			AddFuture(act, func() { won, _ = act.Get(ctx) }).
			AddReceive(approved, func() { won, _ = approved.Receive(ctx) }).
			Select(ctx)
		return won, harvest.Sleep(ctx, time.Hour)
	})

	// fanOut runs n activities from a coroutine each and collects their
	// results over a channel, in completion order.
	fanOut = harvest.NewWorkflow("fan_out", func(ctx harvest.Context, n int) ([]string, error) {
		results := harvest.NewBufferedChannel[string](ctx, 2)
		for i := range n {
			harvest.Go(ctx, func(ctx harvest.Context) {
				v, _ := echo.Execute(ctx, fmt.Sprint(i)).Get(ctx)
				results.Send(ctx, v)
			})
		}
		out := make([]string, 0, n)
		for range n {
			v, _ := results.Receive(ctx)
			out = append(out, v)
		}
		return out, nil
	})
)

func selectSetup(t *testing.T) (*harvesttest.Env, *harvest.Registry) {
	t.Helper()
	reg := harvest.NewRegistry().MustRegister(echo, lateRace, fanOut)
	return harvesttest.New(t, reg), reg
}

// requireReplays replays the closed run's history twice: no
// NonDeterminismError and nothing new.
func requireReplays(t *testing.T, env *harvesttest.Env, reg *harvest.Registry, id uuid.UUID, workflow string) {
	t.Helper()
	task := harvest.WorkflowTask{History: env.History(id),
		Info: harvest.WorkflowInfo{ExecutionID: id.String(), WorkflowName: workflow}}
	for range 2 {
		res, err := reg.RunWorkflowTask(context.Background(), task, zerolog.Nop())
		require.NoError(t, err)
		require.Empty(t, res.Commands)
	}
}

// first is the type of whichever of a and b comes first in history.
func first(history []harvest.Event, a, b harvest.EventType) harvest.EventType {
	for _, ev := range history {
		if ev.Type == a || ev.Type == b {
			return ev.Type
		}
	}
	return ""
}

// hasEvent is a WaitFor condition: the history holds an event of type et.
func hasEvent(et harvest.EventType) func(engine.Description) bool {
	return func(d engine.Description) bool {
		return slices.ContainsFunc(d.History, func(ev harvest.Event) bool { return ev.Type == et })
	}
}

func TestSelectOnTheEngine(t *testing.T) {
	t.Parallel()

	t.Run("ActivityCompletedBeforeTheSignalWins", func(t *testing.T) {
		t.Parallel()
		env, reg := selectSetup(t)
		id := env.Start("late_race", "").ExecutionID
		env.WaitFor(id, "the activity's completion", hasEvent(harvest.EventActivityCompleted))
		env.Signal(id, "approved", "signal")
		env.SkipTime(id) // the first hour: both are ready at the select
		env.SkipTime(id) // the second: a task after the select replays it
		var got string
		env.Output(id, &got)
		require.Equal(t, "activity", got)
		require.Equal(t, harvest.EventActivityCompleted, first(env.History(id), harvest.EventActivityCompleted, harvest.EventSignalReceived))
		requireReplays(t, env, reg, id, "late_race")
	})

	t.Run("SignalBeforeTheActivityCompletedWins", func(t *testing.T) {
		t.Parallel()
		env, reg := selectSetup(t)
		release := make(chan struct{})
		env.ReplaceActivity("echo", harvesttest.Fake(func(_ *harvest.ActivityContext, s string) (string, error) {
			<-release
			return s, nil
		}))
		id := env.Start("late_race", "").ExecutionID
		env.Signal(id, "approved", "signal")
		close(release)
		env.WaitFor(id, "the activity's completion", hasEvent(harvest.EventActivityCompleted))
		env.SkipTime(id)
		env.SkipTime(id)
		var got string
		env.Output(id, &got)
		require.Equal(t, "signal", got)
		require.Equal(t, harvest.EventSignalReceived, first(env.History(id), harvest.EventActivityCompleted, harvest.EventSignalReceived))
		requireReplays(t, env, reg, id, "late_race")
	})

	t.Run("FanOutOverCoroutinesAndAChannel", func(t *testing.T) {
		t.Parallel()
		env, reg := selectSetup(t)
		id := env.Start("fan_out", 10).ExecutionID
		var got []string
		env.Output(id, &got)
		var scheduled, completed []string
		for _, ev := range env.History(id) {
			switch ev.Type {
			case harvest.EventActivityScheduled:
				var d harvest.ActivityScheduledData
				require.NoError(t, json.Unmarshal(ev.Data, &d))
				scheduled = append(scheduled, d.ActivityID+"="+string(d.Input))
			case harvest.EventActivityCompleted:
				var d harvest.ActivityCompletedData
				require.NoError(t, json.Unmarshal(ev.Data, &d))
				var v string
				require.NoError(t, json.Unmarshal(d.Output, &v))
				completed = append(completed, v)
			}
		}
		want := make([]string, 10)
		for i := range want {
			want[i] = fmt.Sprintf(`%d="%d"`, i+1, i)
		}
		require.Equal(t, want, scheduled, "activity ids follow coroutine creation order")
		require.Equal(t, completed, got, "results come in completion order")
		requireReplays(t, env, reg, id, "fan_out")
	})
}
