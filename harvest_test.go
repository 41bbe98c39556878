package harvest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// history is a tiny in-memory stand-in for the engine's event log.
type history struct {
	t      testing.TB
	reg    *harvest.Registry
	info   harvest.WorkflowInfo
	events []harvest.Event
	clock  time.Time
}

func newHistory(t testing.TB, reg *harvest.Registry, workflow string, input any) *history {
	h := &history{t: t, reg: reg, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		info: harvest.WorkflowInfo{ExecutionID: "00000000-0000-4000-8000-000000000001", WorkflowName: workflow, WorkflowID: "wf-1"}}
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	h.append(harvest.NewCommand(harvest.EventWorkflowStarted, harvest.WorkflowStartedData{WorkflowName: workflow, WorkflowID: "wf-1", Input: raw}))
	return h
}

func (h *history) append(cmds ...harvest.Command) {
	for _, c := range cmds {
		h.clock = h.clock.Add(time.Second)
		h.events = append(h.events, harvest.Event{EventID: int64(len(h.events)), Type: c.Type, Timestamp: h.clock, Data: c.Data})
	}
}

// task runs one workflow task and appends its commands.
func (h *history) task() (harvest.TaskResult, error) {
	res, err := h.reg.RunWorkflowTask(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
	if err == nil {
		h.append(res.Commands...)
	}
	return res, err
}

func (h *history) mustTask() harvest.TaskResult {
	res, err := h.task()
	require.NoError(h.t, err)
	return res
}

func data[T any](t *testing.T, c harvest.Command) T {
	var v T
	require.NoError(t, json.Unmarshal(c.Data, &v))
	return v
}

var (
	double = harvest.NewActivity("double", func(_ *harvest.ActivityContext, n int) (int, error) { return 2 * n, nil })
	sum    = harvest.NewWorkflow("sum", func(ctx harvest.Context, n int) (int, error) {
		a := double.Execute(ctx, n)
		b := double.Execute(ctx, n+1)
		x, err := a.Get(ctx)
		if err != nil {
			return 0, err
		}
		y, err := b.Get(ctx)
		return x + y, err
	})
	approved   = harvest.NewSignal[string]("approved")
	waitSignal = harvest.NewWorkflow("wait", func(ctx harvest.Context, _ struct{}) (string, error) {
		v, ok, err := approved.ReceiveWithTimeout(ctx, time.Minute)
		if err != nil || !ok {
			return "timeout", err
		}
		return v, nil
	})
)

func TestReplay(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harvest.Registry {
		t.Helper()
		return harvest.NewRegistry().MustRegister(double, sum, waitSignal)
	}

	t.Run("ParallelActivitiesThenCompletion", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "sum", 3)
		res := h.mustTask()
		require.Len(t, res.Commands, 2, "both activities are scheduled before either completes")
		a := data[harvest.ActivityScheduledData](t, res.Commands[0])
		b := data[harvest.ActivityScheduledData](t, res.Commands[1])
		require.Equal(t, "double", a.Name)
		require.NotEqual(t, a.IdempotencyKey, b.IdempotencyKey)
		require.Equal(t, string(harvest.ActivityKey(h.info.ExecutionID, a.ActivityID)), a.IdempotencyKey)

		// Completion of the second first: the code still waits on the first.
		h.append(harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{ActivityID: b.ActivityID, Output: json.RawMessage("8")}))
		require.Empty(t, h.mustTask().Commands)
		h.append(harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{ActivityID: a.ActivityID, Output: json.RawMessage("6")}))
		res = h.mustTask()
		require.True(t, res.Closed)
		require.Equal(t, harvest.EventWorkflowCompleted, res.Commands[0].Type)
		require.JSONEq(t, "14", string(data[harvest.WorkflowCompletedData](t, res.Commands[0]).Output))

		// A replay of the closed history issues nothing new.
		res = h.mustTask()
		require.Empty(t, res.Commands)
	})

	t.Run("ActivityFailureFailsWorkflow", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "sum", 1)
		h.mustTask()
		h.append(harvest.NewCommand(harvest.EventActivityFailed, harvest.ActivityFailedData{ActivityID: "1", Error: harvest.ErrorInfo{Message: "boom", Type: "x"}, Attempt: 3}))
		res := h.mustTask()
		require.True(t, res.Closed)
		require.Equal(t, harvest.EventWorkflowFailed, res.Commands[0].Type)
		require.Contains(t, data[harvest.WorkflowFailedData](t, res.Commands[0]).Error.Message, "boom")
	})

	t.Run("SignalBeatsTimer", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "wait", struct{}{})
		res := h.mustTask()
		require.Equal(t, harvest.EventTimerStarted, res.Commands[0].Type)
		require.Equal(t, int64(60000), data[harvest.TimerStartedData](t, res.Commands[0]).DurationMS)
		h.append(harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{SignalName: "approved", Payload: json.RawMessage(`"yes"`)}))
		res = h.mustTask()
		require.JSONEq(t, `"yes"`, string(data[harvest.WorkflowCompletedData](t, res.Commands[0]).Output))
	})

	t.Run("TimerBeatsSignal", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "wait", struct{}{})
		h.mustTask()
		h.append(harvest.NewCommand(harvest.EventTimerFired, harvest.TimerFiredData{TimerID: "1"}),
			harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{SignalName: "approved", Payload: json.RawMessage(`"late"`)}))
		res := h.mustTask()
		require.JSONEq(t, `"timeout"`, string(data[harvest.WorkflowCompletedData](t, res.Commands[0]).Output))
	})

	t.Run("SignalBufferedBeforeReceive", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "wait", struct{}{})
		h.append(harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{SignalName: "approved", Payload: json.RawMessage(`"early"`)}))
		res := h.mustTask()
		require.Equal(t, harvest.EventTimerStarted, res.Commands[0].Type, "the first run blocks before the signal is delivered")
		require.JSONEq(t, `"early"`, string(data[harvest.WorkflowCompletedData](t, res.Commands[1]).Output))
	})

	t.Run("NonDeterminismWhenCodeChanges", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "sum", 1)
		h.mustTask()
		before := len(h.events)
		changed := harvest.NewRegistry().MustRegister(double, harvest.NewWorkflow("sum", func(ctx harvest.Context, n int) (int, error) {
			return 0, harvest.Sleep(ctx, time.Second)
		}))
		_, err := changed.RunWorkflowTask(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
		require.ErrorIs(t, err, harvest.ErrNonDeterminism)
		var nd *harvest.NonDeterminismError
		require.ErrorAs(t, err, &nd)
		require.Equal(t, int64(1), nd.EventID)
		require.Len(t, h.events, before)
	})

	t.Run("NonDeterminismWhenCommandsDisappear", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "sum", 1)
		h.mustTask()
		changed := harvest.NewRegistry().MustRegister(double, harvest.NewWorkflow("sum", func(ctx harvest.Context, n int) (int, error) {
			return double.Execute(ctx, n).Get(ctx)
		}))
		_, err := changed.RunWorkflowTask(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
		require.ErrorIs(t, err, harvest.ErrNonDeterminism)
	})

	t.Run("PanicFailsTask", func(t *testing.T) {
		t.Parallel()
		reg := harvest.NewRegistry().MustRegister(harvest.NewWorkflow("boom", func(harvest.Context, int) (int, error) { panic("kaboom") }))
		h := newHistory(t, reg, "boom", 1)
		_, err := h.task()
		require.ErrorIs(t, err, harvest.ErrWorkflowPanic)
		require.Contains(t, err.Error(), "kaboom")
		require.Len(t, h.events, 1)
	})

	t.Run("SideEffectRecordedOnce", func(t *testing.T) {
		t.Parallel()
		calls := 0
		reg := harvest.NewRegistry().MustRegister(harvest.NewWorkflow("se", func(ctx harvest.Context, _ int) (int, error) {
			v, err := harvest.SideEffect(ctx, func() int { calls++; return 41 + calls })
			if err != nil {
				return 0, err
			}
			return v, harvest.Sleep(ctx, time.Second)
		}))
		h := newHistory(t, reg, "se", 0)
		h.mustTask()
		h.append(harvest.NewCommand(harvest.EventTimerFired, harvest.TimerFiredData{TimerID: "2"}))
		res := h.mustTask()
		require.Equal(t, 1, calls, "the side effect ran once; the replay read the marker")
		require.JSONEq(t, "42", string(data[harvest.WorkflowCompletedData](t, res.Commands[0]).Output))
	})

	t.Run("UnknownWorkflow", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "nope", 1)
		_, err := h.task()
		require.ErrorIs(t, err, harvest.ErrUnknownWorkflow)
	})

	t.Run("CodeThatNeverYieldsIsBounded", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		reg := harvest.NewRegistry().MustRegister(harvest.NewWorkflow("spin", func(harvest.Context, int) (int, error) { <-release; return 0, nil }))
		h := newHistory(t, reg, "spin", 1)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := reg.RunWorkflowTask(ctx, harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// TestCommandPayloadsAreTheirData: the engine reads a command's Payload
// instead of decoding its Data, so the two must agree, options whose
// durations JSON truncates to whole milliseconds included.
func TestCommandPayloadsAreTheirData(t *testing.T) {
	t.Parallel()
	odd := harvest.ActivityOptions{StartToClose: 1500 * time.Microsecond, HeartbeatTimeout: 2*time.Second + 1,
		Retry: &harvest.RetryPolicy{InitialInterval: 10*time.Millisecond + 7}}
	wf := harvest.NewWorkflow("payloads", func(ctx harvest.Context, _ struct{}) (int, error) {
		f := double.Execute(ctx, 1, odd)
		timer := harvest.NewTimer(ctx, 90*time.Second+1)
		if _, err := timer.Get(ctx); err != nil {
			return 0, err
		}
		return f.Get(ctx)
	})
	h := newHistory(t, harvest.NewRegistry().MustRegister(double, wf), "payloads", struct{}{})
	res := h.mustTask()
	require.Len(t, res.Commands, 2)
	check := func(c harvest.Command) {
		t.Helper()
		require.NotNil(t, c.Payload, "%s made without its payload", c.Type)
		switch p := c.Payload.(type) {
		case harvest.ActivityScheduledData:
			require.Equal(t, data[harvest.ActivityScheduledData](t, c), p)
		case harvest.TimerStartedData:
			require.Equal(t, data[harvest.TimerStartedData](t, c), p)
		case harvest.WorkflowCompletedData:
			require.Equal(t, data[harvest.WorkflowCompletedData](t, c), p)
		default:
			t.Fatalf("unexpected payload %T", p)
		}
	}
	for _, c := range res.Commands {
		check(c)
	}
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	k := harvest.ActivityKey("exec-a", "1")
	require.Equal(t, k, harvest.ActivityKey("exec-a", "1"), "stable")
	require.NotEqual(t, k, harvest.ActivityKey("exec-a", "2"), "distinct per invocation")
	require.NotEqual(t, k, harvest.ActivityKey("exec-b", "1"), "distinct per execution")
	require.Equal(t, k.Subkey("db"), k.Subkey("db"))
	require.NotEqual(t, k.Subkey("db"), k.Subkey("email"))
	require.NotEqual(t, k.Subkey("db"), harvest.ActivityKey("exec-a", "2").Subkey("db"))
	require.Len(t, k.String(), 36)
	// The derivation is part of the contract: pin one value.
	require.Equal(t, harvest.IdempotencyKey("hvk_"), k[:4])
	ctx := harvest.NewActivityContext(context.Background(), harvest.ActivityInfo{IdempotencyKey: k, Attempt: 2}, nil, zerolog.Nop())
	require.Equal(t, k.Subkey("email"), ctx.Subkey("email"))
	require.Equal(t, 2, ctx.Attempt())
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	p := harvest.Exponential(5, time.Second)
	p.MaxInterval = 5 * time.Second
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 5 * time.Second}, {40, 5 * time.Second}} {
		require.Equal(t, tc.want, p.Backoff(tc.attempt), "attempt %d", tc.attempt)
	}
	def := harvest.RetryPolicy{}
	require.True(t, def.ShouldRetry(2, harvest.ErrorInfo{}))
	require.False(t, def.ShouldRetry(3, harvest.ErrorInfo{}), "default is 3 attempts")
	require.False(t, def.ShouldRetry(1, harvest.ErrorInfo{NonRetryable: true}))
	typed := harvest.RetryPolicy{NonRetryableErrors: []string{"card_declined"}}
	require.False(t, typed.ShouldRetry(1, harvest.ErrorInfo{Type: "card_declined"}))
	require.True(t, typed.ShouldRetry(1, harvest.ErrorInfo{Type: "network"}))

	opts := harvest.ActivityOptions{StartToClose: 3 * time.Second, HeartbeatTimeout: time.Second, Retry: p}.WithDefaults()
	raw, err := json.Marshal(opts)
	require.NoError(t, err)
	var back harvest.ActivityOptions
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, opts, back)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	info := harvest.ToErrorInfo(harvest.NewNonRetryableError("declined", "card declined"))
	require.Equal(t, harvest.ErrorInfo{Message: "card declined", Type: "declined", NonRetryable: true}, info)
	require.Equal(t, "*errors.errorString", harvest.ToErrorInfo(errors.New("x")).Type)
}

func TestInputSchema(t *testing.T) {
	t.Parallel()
	wf := harvest.NewWorkflow("typed", func(_ harvest.Context, in map[string]any) (string, error) { return "", nil }).
		WithInputSchema(json.RawMessage(`{"type":"object","required":["user_id"],"properties":{"user_id":{"type":"integer","minimum":1}}}`))
	reg := harvest.NewRegistry().MustRegister(wf)
	require.NoError(t, reg.ValidateInput("typed", json.RawMessage(`{"user_id": 42}`)))
	err := reg.ValidateInput("typed", json.RawMessage(`{"user_id": 0}`))
	require.ErrorIs(t, err, harvest.ErrInvalidInput)
	var ie *harvest.InputError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, "/user_id", ie.Violations[0].Path)
	require.NotEmpty(t, ie.Violations[0].Message)
	require.ErrorAs(t, reg.ValidateInput("typed", json.RawMessage(`{}`)), &ie)
	require.NoError(t, reg.ValidateInput("unknown", json.RawMessage(`1`)), "no schema, no check")

	bad := harvest.NewWorkflow("bad", func(harvest.Context, int) (int, error) { return 0, nil }).WithInputSchema(json.RawMessage(`{"type": 5}`))
	require.Error(t, harvest.NewRegistry().Register(bad), "an invalid schema fails registration")
}
