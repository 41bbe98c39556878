package runs

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// taskNow is the workflow time the tests' tasks see.
var taskNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// newExec is a running first run of shard 1 with no events after the
// start (event 0).
func newExec() *store.Exec {
	id := shardapi.NewExecutionID(1)
	return &store.Exec{
		ID: id, WorkflowName: "order", WorkflowID: "order-1",
		State: shardapi.StateRunning, NextEventID: 1, ChainID: id,
	}
}

// noRoute is a Router for tasks without outbox commands: a call fails
// the test.
func noRoute(t *testing.T) Router {
	return func(_ *Changes, _ *store.Exec, c harvest.Command) error {
		t.Errorf("unexpected route of %s", c.Type)
		return nil
	}
}

// apply applies cmds as one task of a new run, which must succeed.
func apply(t *testing.T, closed bool, cmds ...harvest.Command) (*Changes, *store.Exec) {
	t.Helper()
	ch, ex := New(), newExec()
	require.NoError(t, ch.ApplyTask(ex, harvest.TaskResult{Commands: cmds, Closed: closed}, taskNow, noRoute(t)))
	return ch, ex
}

// onlyUpdate is the changes' one run update.
func onlyUpdate(t *testing.T, ch *Changes) *Update {
	t.Helper()
	require.Len(t, ch.updates, 1, "one update per run")
	return ch.updates[0]
}

func scheduled(id string, opts harvest.ActivityOptions) harvest.Command {
	return harvest.NewCommand(harvest.EventActivityScheduled, harvest.ActivityScheduledData{
		ActivityID: id, Name: "charge", Input: json.RawMessage(`{"amount":3}`), Queue: "payments",
		IdempotencyKey: "key-" + id, Options: opts,
	})
}

func timerStarted(id string, ms int64) harvest.Command {
	return harvest.NewCommand(harvest.EventTimerStarted, harvest.TimerStartedData{TimerID: id, DurationMS: ms})
}

func timerCanceled(id string) harvest.Command {
	return harvest.NewCommand(harvest.EventTimerCanceled, harvest.TimerCanceledData{TimerID: id})
}

func activityCancel(id string) harvest.Command {
	return harvest.NewCommand(harvest.EventActivityCancelRequested, harvest.ActivityCancelRequestedData{ActivityID: id})
}

func marker(id string) harvest.Command {
	return harvest.NewCommand(harvest.EventMarkerRecorded, harvest.MarkerRecordedData{Name: "side", MarkerID: id})
}

func TestApplyTaskActivityScheduled(t *testing.T) {
	t.Parallel()

	t.Run("AddsOneTaskAppendsTheEventAndClearsTheTask", func(t *testing.T) {
		t.Parallel()
		ch, ex := apply(t, false, scheduled("a1", harvest.ActivityOptions{ScheduleToClose: 5 * time.Second}))
		require.Equal(t, 1, ch.TaskCount())
		require.Equal(t, []uuid.UUID{ex.ID}, ch.tasks.ids)
		require.Equal(t, []string{"a1"}, ch.tasks.activityIDs)
		require.Equal(t, []string{"order"}, ch.tasks.wfNames)
		require.Equal(t, []string{"order-1"}, ch.tasks.wfIDs)
		require.Equal(t, []string{"payments"}, ch.tasks.queues)
		require.Equal(t, []string{"key-a1"}, ch.tasks.keys)
		require.Equal(t, `{"amount":3}`, *ch.tasks.inputs[0])
		require.Equal(t, int64(5000), *ch.tasks.closeMS[0], "the schedule-to-close bound in milliseconds")
		require.Equal(t, int64(2), ex.NextEventID)
		require.Equal(t, []int64{1}, ch.events.nums)
		require.Equal(t, []string{string(harvest.EventActivityScheduled)}, ch.events.types)
		u := onlyUpdate(t, ch)
		require.True(t, u.Clear)
		require.False(t, u.Closes)
		require.True(t, u.Appended)
		require.False(t, u.Wake, "a task's own events make no task due")
		require.Equal(t, int64(2), u.Next)
		fx := ch.Effects()
		require.Equal(t, 1, fx.Tasks)
		require.Empty(t, fx.Closed)
		require.False(t, fx.Wake.Has(loop.Workflow))
		require.False(t, fx.Wake.Has(loop.Timer))
	})

	t.Run("NoScheduleToCloseAndNoInput", func(t *testing.T) {
		t.Parallel()
		c := harvest.NewCommand(harvest.EventActivityScheduled, harvest.ActivityScheduledData{ActivityID: "a1", Name: "ping"})
		ch, _ := apply(t, false, c)
		require.Nil(t, ch.tasks.closeMS[0], "no bound: no deadline")
		require.Equal(t, "null", *ch.tasks.inputs[0], "an empty input is recorded as null")
	})
}

func TestApplyTaskAppendsEveryCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cmds  []harvest.Command
		types []harvest.EventType
	}{
		{name: "None", cmds: nil},
		{name: "One", cmds: []harvest.Command{marker("m1")}, types: []harvest.EventType{harvest.EventMarkerRecorded}},
		{
			name: "Three",
			cmds: []harvest.Command{marker("m1"), scheduled("a1", harvest.ActivityOptions{}), timerStarted("t1", 10)},
			types: []harvest.EventType{
				harvest.EventMarkerRecorded, harvest.EventActivityScheduled, harvest.EventTimerStarted,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch, ex := apply(t, false, tt.cmds...)
			n := int64(len(tt.cmds))
			require.Equal(t, 1+n, ex.NextEventID, "the run's next event id advances by the commands")
			require.Len(t, ch.events.types, len(tt.types))
			for i, typ := range tt.types {
				require.Equal(t, string(typ), ch.events.types[i])
				require.Equal(t, int64(1+i), ch.events.nums[i], "events follow the run's last one")
				require.Equal(t, ex.ID, ch.events.ids[i])
			}
			u := onlyUpdate(t, ch)
			require.Equal(t, 1+n, u.Next)
			require.Equal(t, n > 0, u.Appended)
			require.True(t, u.Clear)
		})
	}
}

func TestApplyTaskTimerStarted(t *testing.T) {
	t.Parallel()
	res := harvest.TaskResult{Commands: []harvest.Command{timerStarted("t1", 1500)}}
	ch, ex := New(), newExec()
	require.NoError(t, ch.ApplyTask(ex, res, taskNow, noRoute(t)))

	want := taskNow.Add(1500 * time.Millisecond)
	require.Equal(t, []string{"t1"}, ch.timers.timerIDs)
	require.Equal(t, []uuid.UUID{ex.ID}, ch.timers.ids)
	require.Equal(t, []time.Time{want}, ch.timers.fireAt, "a timer fires its duration after the task's time")
	var rec harvest.TimerStartedData
	require.NoError(t, json.Unmarshal([]byte(ch.events.data[0]), &rec))
	require.NotNil(t, rec.FireAt, "the recorded event carries the fire time")
	require.True(t, want.Equal(*rec.FireAt))
	require.Nil(t, res.Commands[0].Payload.(harvest.TimerStartedData).FireAt, "the caller's commands are not changed")
	require.True(t, ch.Effects().Wake.Has(loop.Timer))
}

func TestApplyTaskCancelledInTask(t *testing.T) {
	t.Parallel()
	opts := harvest.ActivityOptions{}
	tests := []struct {
		name                     string
		cmds                     []harvest.Command
		timers, activities       []string // the rows inserted
		timerCancels, actCancels []string // the cancels
	}{
		{
			name:         "TimerStartedAndCancelled",
			cmds:         []harvest.Command{timerStarted("t1", 10), timerCanceled("t1")},
			timerCancels: []string{"t1"},
		},
		{
			name:       "ActivityScheduledAndCancelled",
			cmds:       []harvest.Command{scheduled("a1", opts), activityCancel("a1")},
			actCancels: []string{"a1"},
		},
		{
			name:         "AnotherTimerCancelled",
			cmds:         []harvest.Command{timerStarted("t1", 10), timerCanceled("t0")},
			timers:       []string{"t1"},
			timerCancels: []string{"t0"},
		},
		{
			name:         "ATimerCancelSparesTheActivityOfItsID",
			cmds:         []harvest.Command{scheduled("x", opts), timerStarted("x", 10), timerCanceled("x")},
			activities:   []string{"x"},
			timerCancels: []string{"x"},
		},
		{
			name:       "AnActivityCancelSparesTheTimerOfItsID",
			cmds:       []harvest.Command{timerStarted("x", 10), scheduled("x", opts), activityCancel("x")},
			timers:     []string{"x"},
			actCancels: []string{"x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch, ex := apply(t, false, tt.cmds...)
			require.Equal(t, tt.timers, ch.timers.timerIDs)
			require.Equal(t, len(tt.activities), ch.TaskCount())
			require.Equal(t, tt.activities, ch.tasks.activityIDs)
			require.Equal(t, tt.timerCancels, ch.cancels.timerIDs)
			require.Equal(t, tt.actCancels, ch.cancels.actIDs)
			require.Equal(t, int64(1+len(tt.cmds)), ex.NextEventID, "every command is still recorded")
			require.Equal(t, len(tt.timers) > 0, ch.Effects().Wake.Has(loop.Timer))
		})
	}
}

func TestCancelledInTask(t *testing.T) {
	t.Parallel()
	require.Nil(t, cancelledInTask([]harvest.Command{timerStarted("t1", 10), marker("m")}), "no cancel: no set")
	got := cancelledInTask([]harvest.Command{timerCanceled("t1"), activityCancel("a1"), activityCancel("a2")})
	require.Equal(t, map[harvest.EventType]map[string]bool{
		harvest.EventTimerStarted:      {"t1": true},
		harvest.EventActivityScheduled: {"a1": true, "a2": true},
	}, got)
}

func TestApplyTaskCloses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		last        harvest.Command
		state       string
		output, err string // JSON; empty: none
	}{
		{
			name:   "Completed",
			last:   harvest.NewCommand(harvest.EventWorkflowCompleted, harvest.WorkflowCompletedData{Output: json.RawMessage(`{"ok":true}`)}),
			state:  shardapi.StateCompleted,
			output: `{"ok":true}`,
		},
		{
			name:   "CompletedWithoutOutput",
			last:   harvest.NewCommand(harvest.EventWorkflowCompleted, harvest.WorkflowCompletedData{}),
			state:  shardapi.StateCompleted,
			output: `null`,
		},
		{
			name:  "Failed",
			last:  harvest.NewCommand(harvest.EventWorkflowFailed, harvest.WorkflowFailedData{Error: harvest.ErrorInfo{Message: "boom", Type: "Payment"}}),
			state: shardapi.StateFailed,
			err:   `{"message":"boom","type":"Payment"}`,
		},
		{
			name:  "Cancelled",
			last:  harvest.NewCommand(harvest.EventWorkflowCancelled, harvest.WorkflowClosedData{Reason: "stop"}),
			state: shardapi.StateCancelled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch, ex := apply(t, true, marker("m1"), tt.last)
			require.Equal(t, tt.state, ex.State)
			require.Equal(t, []uuid.UUID{ex.ID}, ch.Effects().Closed)
			u := onlyUpdate(t, ch)
			require.True(t, u.Closes)
			require.Equal(t, tt.state, u.State)
			require.False(t, u.ReleaseSlot, "a run closed by its code keeps its slot to the close's clean-up")
			require.Equal(t, tt.output, string(u.Output))
			if tt.err == "" {
				require.Nil(t, u.Err)
			} else {
				require.JSONEq(t, tt.err, string(u.Err))
			}
			require.Equal(t, int64(3), ex.NextEventID, "the closing command is recorded too")
			require.False(t, ch.Effects().Wake.Has(loop.Workflow))
		})
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state   string
		release bool
	}{
		{shardapi.StateCompleted, false},
		{shardapi.StateFailed, false},
		{shardapi.StateCancelled, false},
		{shardapi.StateTimedOut, false},
		{shardapi.StateTerminated, true},
		{shardapi.StateContinuedAsNew, true},
	}
	for _, tt := range tests {
		t.Run(tt.state, func(t *testing.T) {
			t.Parallel()
			ch, ex := New(), newExec()
			ch.Close(ex, tt.state, nil, json.RawMessage(`{"message":"x"}`))
			u := onlyUpdate(t, ch)
			require.True(t, u.Closes)
			require.Equal(t, tt.state, u.State)
			require.Equal(t, tt.release, u.ReleaseSlot)
			require.Equal(t, `{"message":"x"}`, string(u.Err))
			require.Equal(t, tt.state, ex.State)
			require.Equal(t, []uuid.UUID{ex.ID}, ch.Effects().Closed)
		})
	}
}

func continueAsNew() harvest.Command {
	return harvest.NewCommand(harvest.EventWorkflowContinuedAsNew, harvest.WorkflowContinuedAsNewData{
		Input:           json.RawMessage(`{"page":2}`),
		CarriedSignals:  []harvest.SignalReceivedData{{SignalName: "poke"}},
		CancelRequested: &harvest.WorkflowCancelRequestedData{Reason: "later"},
	})
}

func TestApplyTaskContinueAsNew(t *testing.T) {
	t.Parallel()
	res := harvest.TaskResult{Commands: []harvest.Command{marker("m1"), continueAsNew()}, Closed: true}
	require.True(t, ContinuesAsNew(res))
	ch, ex := New(), newExec()
	require.NoError(t, ch.ApplyTask(ex, res, taskNow, noRoute(t)))

	var rec harvest.WorkflowContinuedAsNewData
	require.NoError(t, json.Unmarshal([]byte(ch.events.data[1]), &rec))
	next, err := uuid.Parse(rec.NewExecutionID)
	require.NoError(t, err, "the recorded event names the successor")
	require.NotEqual(t, ex.ID, next)
	require.Equal(t, shardapi.ShardOf(ex.ID), shardapi.ShardOf(next), "the successor is on the run's shard")

	require.Equal(t, shardapi.StateContinuedAsNew, ex.State)
	u := onlyUpdate(t, ch)
	require.True(t, u.Closes)
	require.True(t, u.ReleaseSlot)
	require.Equal(t, next, u.ContinuedTo)
	fx := ch.Effects()
	require.Equal(t, []uuid.UUID{ex.ID}, fx.Closed)
	require.True(t, fx.Wake.Has(loop.Workflow), "the successor has its first task due")
	requireHandOver(t, ch, ex, next)
}

// requireHandOver checks ch's one successor, next of ex, and its first
// events: started, the carried signal, the carried cancel request.
func requireHandOver(t *testing.T, ch *Changes, ex *store.Exec, next uuid.UUID) {
	t.Helper()
	h := &ch.handOvers
	require.Equal(t, []uuid.UUID{ex.ID}, h.olds)
	require.Equal(t, []uuid.UUID{next}, h.news)
	require.Equal(t, []string{`{"page":2}`}, h.inputs)
	require.Equal(t, []int64{3}, h.next)
	require.Equal(t, []uuid.UUID{next, next, next}, h.events.ids)
	require.Equal(t, []int64{0, 1, 2}, h.events.nums)
	require.Equal(t, []string{
		string(harvest.EventWorkflowStarted), string(harvest.EventSignalReceived), string(harvest.EventWorkflowCancelRequested),
	}, h.events.types)
	var started harvest.WorkflowStartedData
	require.NoError(t, json.Unmarshal([]byte(h.events.data[0]), &started))
	require.Equal(t, harvest.WorkflowStartedData{
		WorkflowName: "order", WorkflowID: "order-1", Input: json.RawMessage(`{"page":2}`),
		ContinuedFrom: ex.ID.String(), ChainID: ex.ChainID.String(),
	}, started)
	var sig harvest.SignalReceivedData
	require.NoError(t, json.Unmarshal([]byte(h.events.data[1]), &sig))
	require.Equal(t, "poke", sig.SignalName)
	require.Equal(t, "null", string(sig.Payload), "a carried signal without payload gets null")
}

func TestFillContinueAsNew(t *testing.T) {
	t.Parallel()

	t.Run("FromDataOnly", func(t *testing.T) {
		t.Parallel()
		ex := newExec()
		ex.ID = shardapi.NewExecutionID(4242)
		c := harvest.Command{Type: harvest.EventWorkflowContinuedAsNew, Data: json.RawMessage(`{"input":{"n":1}}`)}
		got, err := fillContinueAsNew(ex, c)
		require.NoError(t, err)
		d := got.Payload.(harvest.WorkflowContinuedAsNewData)
		require.JSONEq(t, `{"n":1}`, string(d.Input))
		next, err := uuid.Parse(d.NewExecutionID)
		require.NoError(t, err)
		require.Equal(t, uint16(4242), shardapi.ShardOf(next))
	})

	t.Run("BadData", func(t *testing.T) {
		t.Parallel()
		c := harvest.Command{Type: harvest.EventWorkflowContinuedAsNew, Data: json.RawMessage(`{`)}
		_, err := fillContinueAsNew(newExec(), c)
		require.ErrorContains(t, err, "decode WorkflowContinuedAsNew")
	})

	t.Run("CloseWithABadSuccessorID", func(t *testing.T) {
		t.Parallel()
		c := harvest.NewCommand(harvest.EventWorkflowContinuedAsNew, harvest.WorkflowContinuedAsNewData{NewExecutionID: "nope"})
		ch, ex := New(), newExec()
		require.ErrorContains(t, ch.closeFromCommand(ex, c), `successor id "nope"`)
		require.Equal(t, shardapi.StateRunning, ex.State, "the run stays open")
		require.Empty(t, ch.closed)
	})
}

func TestContinuesAsNew(t *testing.T) {
	t.Parallel()
	can := continueAsNew()
	done := harvest.NewCommand(harvest.EventWorkflowCompleted, harvest.WorkflowCompletedData{})
	tests := []struct {
		name string
		res  harvest.TaskResult
		want bool
	}{
		{"LastCommandClosed", harvest.TaskResult{Commands: []harvest.Command{marker("m"), can}, Closed: true}, true},
		{"NotClosed", harvest.TaskResult{Commands: []harvest.Command{can}}, false},
		{"ClosedOtherwise", harvest.TaskResult{Commands: []harvest.Command{can, done}, Closed: true}, false},
		{"NoCommands", harvest.TaskResult{Closed: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ContinuesAsNew(tt.res))
		})
	}
}

// routeCall is one call of a recording Router.
type routeCall struct {
	ch  *Changes
	ex  *store.Exec
	typ harvest.EventType
}

func TestApplyTaskRoutes(t *testing.T) {
	t.Parallel()
	sig := harvest.NewCommand(harvest.EventSignalExternalInitiated, harvest.SignalExternalInitiatedData{CommandID: "c1", SignalName: "go"})
	child := harvest.NewCommand(harvest.EventChildWorkflowInitiated, harvest.ChildWorkflowInitiatedData{CommandID: "c2", WorkflowName: "sub"})

	t.Run("OutboxCommandsGoToTheRouter", func(t *testing.T) {
		t.Parallel()
		var calls []routeCall
		route := func(ch *Changes, ex *store.Exec, c harvest.Command) error {
			calls = append(calls, routeCall{ch, ex, c.Type})
			return ch.Outbox.Add(ex.ID, "cmd", string(c.Type), c.Payload)
		}
		ch, ex := New(), newExec()
		res := harvest.TaskResult{Commands: []harvest.Command{sig, scheduled("a1", harvest.ActivityOptions{}), child}}
		require.NoError(t, ch.ApplyTask(ex, res, taskNow, route))
		require.Equal(t, []routeCall{
			{ch, ex, harvest.EventSignalExternalInitiated},
			{ch, ex, harvest.EventChildWorkflowInitiated},
		}, calls)
		require.Equal(t, 2, ch.Outbox.Len(), "the router's rows are the changes'")
		require.Equal(t, 1, ch.TaskCount())
		require.Equal(t, int64(4), ex.NextEventID, "the routed commands are recorded")
	})

	t.Run("TheRoutersErrorIsReturned", func(t *testing.T) {
		t.Parallel()
		full := errors.New("outbox full")
		route := func(*Changes, *store.Exec, harvest.Command) error { return full }
		ch, ex := New(), newExec()
		err := ch.ApplyTask(ex, harvest.TaskResult{Commands: []harvest.Command{child}}, taskNow, route)
		require.ErrorIs(t, err, full)
		require.Empty(t, ch.events.ids, "nothing is appended")
		require.Equal(t, int64(1), ex.NextEventID)
	})
}

func TestApplyTaskErrors(t *testing.T) {
	t.Parallel()
	bad := func(typ harvest.EventType) harvest.Command {
		return harvest.Command{Type: typ, Data: json.RawMessage(`{`)}
	}
	tests := []struct {
		name    string
		cmds    []harvest.Command
		closed  bool
		wantErr string
	}{
		{"UnexpectedLastCommand", []harvest.Command{timerStarted("t1", 10)}, true, "unexpected last command TimerStarted"},
		{"ClosedByAMarker", []harvest.Command{marker("m")}, true, "unexpected last command MarkerRecorded"},
		{"BadActivityScheduled", []harvest.Command{bad(harvest.EventActivityScheduled)}, false, "decode ActivityScheduled"},
		{"BadTimerStarted", []harvest.Command{bad(harvest.EventTimerStarted)}, false, "decode TimerStarted"},
		{"BadTimerCanceled", []harvest.Command{bad(harvest.EventTimerCanceled)}, false, "decode TimerCanceled"},
		{"BadActivityCancel", []harvest.Command{bad(harvest.EventActivityCancelRequested)}, false, "decode ActivityCancelRequested"},
		{"BadContinueAsNew", []harvest.Command{bad(harvest.EventWorkflowContinuedAsNew)}, true, "decode WorkflowContinuedAsNew"},
		{"BadCompleted", []harvest.Command{bad(harvest.EventWorkflowCompleted)}, true, "decode WorkflowCompleted"},
		{"BadFailed", []harvest.Command{bad(harvest.EventWorkflowFailed)}, true, "decode WorkflowFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch, ex := New(), newExec()
			err := ch.ApplyTask(ex, harvest.TaskResult{Commands: tt.cmds, Closed: tt.closed}, taskNow, noRoute(t))
			require.ErrorContains(t, err, tt.wantErr)
			require.Equal(t, shardapi.StateRunning, ex.State)
			require.Empty(t, ch.closed)
		})
	}
}

func TestAppendEvents(t *testing.T) {
	t.Parallel()
	for _, wake := range []bool{true, false} {
		name := map[bool]string{true: "Wake", false: "NoWake"}[wake]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ch, ex := New(), newExec()
			ch.AppendEvents(ex, []harvest.Command{marker("m1"), marker("m2")}, wake)
			require.Equal(t, int64(3), ex.NextEventID)
			require.Equal(t, []int64{1, 2}, ch.events.nums)
			u := onlyUpdate(t, ch)
			require.Equal(t, wake, u.Wake)
			require.True(t, u.Appended)
			require.False(t, u.Clear)
			require.Equal(t, wake, ch.Effects().Wake.Has(loop.Workflow))
		})
	}

	t.Run("OneUpdatePerRunAndWakeSticks", func(t *testing.T) {
		t.Parallel()
		ch, ex, other := New(), newExec(), newExec()
		ch.AppendEvents(ex, []harvest.Command{marker("m1")}, true)
		ch.AppendEvents(ex, []harvest.Command{marker("m2")}, false)
		ch.AppendEvents(other, nil, false)
		require.Len(t, ch.updates, 2)
		require.Equal(t, &Update{ID: ex.ID, Next: 3, Appended: true, Wake: true}, ch.updates[0])
		require.Equal(t, &Update{ID: other.ID, Next: 1}, ch.updates[1], "an empty append changes nothing")
		require.Equal(t, []int64{1, 2}, ch.events.nums)
	})
}

func TestTakeUpdates(t *testing.T) {
	t.Parallel()
	ch, ex := New(), newExec()
	ch.ClearWorkflowTask(ex)
	got := ch.TakeUpdates()
	require.Equal(t, []*Update{{ID: ex.ID, Next: 1, Clear: true}}, got)
	require.Empty(t, ch.updates)
	ch.AppendEvents(ex, nil, true)
	require.Equal(t, &Update{ID: ex.ID, Next: 1, Wake: true}, onlyUpdate(t, ch), "a fresh update after the take")
}

func TestRunUpdates(t *testing.T) {
	t.Parallel()
	ch, open, done := New(), newExec(), newExec()
	ch.AppendEvents(open, []harvest.Command{marker("m")}, true)
	ch.Close(done, shardapi.StateCompleted, json.RawMessage(`1`), nil)
	r := ch.runUpdates()
	require.Equal(t, []uuid.UUID{open.ID, done.ID}, r.IDs)
	require.Equal(t, []bool{false, true}, r.Clear, "closing retires the workflow task")
	require.Equal(t, []bool{false, true}, r.Closes)
	require.Equal(t, []bool{true, false}, r.Wake)
	require.Nil(t, r.States[0], "an open run keeps its state")
	require.Equal(t, shardapi.StateCompleted, *r.States[1])
	require.Equal(t, "1", *r.Outputs[1])
	require.Nil(t, r.Errs[1])
}

func TestEffectsWake(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(ch *Changes, ex *store.Exec)
		want  loop.Set
	}{
		{"Nothing", func(*Changes, *store.Exec) {}, 0},
		{"Timer", func(ch *Changes, ex *store.Exec) { ch.addTimer(ex, "t", taskNow) }, loop.Timer},
		{"Callbacks", func(ch *Changes, _ *store.Exec) { ch.callbacksDue = true }, loop.Callback},
		{"Outbox", func(ch *Changes, _ *store.Exec) { ch.outboxDue = true }, loop.Outbox},
		{"WakeAndTimer", func(ch *Changes, ex *store.Exec) {
			ch.AppendEvents(ex, nil, true)
			ch.addTimer(ex, "t", taskNow)
		}, loop.Workflow | loop.Timer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ch := New()
			tt.setup(ch, newExec())
			require.Equal(t, tt.want, ch.Effects().Wake)
		})
	}
}

func TestClaimFirst(t *testing.T) {
	t.Parallel()
	ch, open, done := New(), newExec(), newExec()
	for _, a := range []struct {
		ex *store.Exec
		id string
	}{{done, "d1"}, {open, "o1"}, {open, "o2"}, {open, "o3"}} {
		require.NoError(t, ch.addActivityTask(a.ex, harvest.ActivityScheduledData{ActivityID: a.id}))
	}
	ch.Close(done, shardapi.StateCompleted, nil, nil)
	claim := make([]bool, ch.TaskCount())
	at := ch.claimFirst(claim, 2, nil)
	require.Equal(t, []bool{false, true, true, false}, claim, "the first tasks of open runs, as many as the slots")
	require.Equal(t, map[taskKey]int{{open.ID, "o1"}: 1, {open.ID, "o2"}: 2}, at)
	claim = make([]bool, ch.TaskCount())
	require.Empty(t, ch.claimFirst(claim, 2, map[string]bool{"": true}), "a limited activity's tasks wait for the loop's claim")
	require.Equal(t, []bool{false, false, false, false}, claim)
}

func TestPayload(t *testing.T) {
	t.Parallel()
	data := json.RawMessage(`{"timer_id":"from-data"}`)
	tests := []struct {
		name    string
		payload any
		want    string
	}{
		{"CarriedValue", harvest.TimerStartedData{TimerID: "from-payload"}, "from-payload"},
		{"NoValueDecodesData", nil, "from-data"},
		{"ValueOfAnotherTypeDecodesData", harvest.TimerCanceledData{TimerID: "other"}, "from-data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := harvest.Command{Type: harvest.EventTimerStarted, Data: data, Payload: tt.payload}
			got, err := Payload[harvest.TimerStartedData](c)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.TimerID)
		})
	}

	t.Run("BadData", func(t *testing.T) {
		t.Parallel()
		_, err := Payload[harvest.TimerStartedData](harvest.Command{Data: json.RawMessage(`[`)})
		require.Error(t, err)
	})
}

func TestInputOrNullAndJSONText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   json.RawMessage
		want string
		text *string
	}{
		{"Nil", nil, "null", nil},
		{"Empty", json.RawMessage{}, "null", nil},
		{"Value", json.RawMessage(`{"a":1}`), `{"a":1}`, ptr(`{"a":1}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, string(InputOrNull(tt.in)))
			require.Equal(t, tt.text, JSONText(tt.in))
		})
	}
}

func ptr[T any](v T) *T { return &v }
