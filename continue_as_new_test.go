package harvest_test

import (
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

func sig(name, payload, key string) harvest.Command {
	return harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{
		SignalName: name, Payload: json.RawMessage(payload), IdempotencyKey: key})
}

func TestContinueAsNew(t *testing.T) {
	t.Parallel()
	next := harvest.NewSignal[string]("next")
	var lengths []int
	relay := harvest.NewWorkflow("relay", func(ctx harvest.Context, gen int) (string, error) {
		lengths = append(lengths, ctx.Info().HistoryLength)
		v, err := next.Receive(ctx)
		if err != nil {
			return "", err
		}
		lengths = append(lengths, ctx.Info().HistoryLength)
		if gen == 0 {
			return "", harvest.ContinueAsNew(ctx, gen+1)
		}
		return v, nil
	})
	wrongType := harvest.NewWorkflow("wrong_type", func(ctx harvest.Context, gen int) (string, error) {
		return "", harvest.ContinueAsNew(ctx, "one")
	})
	var typed *harvest.Workflow[int, string]
	typed = harvest.NewWorkflow("typed", func(ctx harvest.Context, gen int) (string, error) {
		return "", typed.ContinueAsNew(ctx, gen+1)
	})
	capped := harvest.NewWorkflow("capped", func(ctx harvest.Context, got int) (string, error) {
		for !harvest.ShouldContinueAsNew(ctx) {
			if _, err := next.Receive(ctx); err != nil {
				return "", err
			}
			got++
		}
		return "", harvest.ContinueAsNew(ctx, got)
	})
	reg := harvest.NewRegistry().MustRegister(relay, wrongType, typed, capped)

	t.Run("CarriesWhatTheCodeDidNotConsumeInArrivalOrder", func(t *testing.T) {
		h := newHistory(t, reg, "relay", 0)
		// "a" wakes the code, which continues at once: "b" (buffered)
		// and "c" (not delivered yet) and the cancel request carry over.
		h.append(sig("next", `"a"`, "ka"), sig("next", `"b"`, "kb"), sig("other", `1`, ""),
			harvest.NewCommand(harvest.EventWorkflowCancelRequested, harvest.WorkflowCancelRequestedData{Reason: "r"}))
		res := h.mustTask()
		require.True(t, res.Closed)
		last := res.Commands[len(res.Commands)-1]
		require.Equal(t, harvest.EventWorkflowContinuedAsNew, last.Type)
		d := data[harvest.WorkflowContinuedAsNewData](t, last)
		require.JSONEq(t, `1`, string(d.Input))
		require.Equal(t, []harvest.SignalReceivedData{
			{SignalName: "next", Payload: json.RawMessage(`"b"`), IdempotencyKey: "kb"},
			{SignalName: "other", Payload: json.RawMessage(`1`)},
		}, d.CarriedSignals)
		require.Equal(t, &harvest.WorkflowCancelRequestedData{Reason: "r"}, d.CancelRequested)
	})

	t.Run("CarriesABufferedSignal", func(t *testing.T) {
		h := newHistory(t, reg, "relay", 0)
		h.append(sig("other", `2`, "k2"), sig("next", `"a"`, "ka"))
		res := h.mustTask()
		d := data[harvest.WorkflowContinuedAsNewData](t, res.Commands[len(res.Commands)-1])
		require.Equal(t, []harvest.SignalReceivedData{{SignalName: "other", Payload: json.RawMessage(`2`), IdempotencyKey: "k2"}},
			d.CarriedSignals, "delivered before the code returned, never received")
		require.Nil(t, d.CancelRequested)
	})

	t.Run("HistoryLengthIsTheSameOnReplay", func(t *testing.T) {
		lengths = nil
		h := newHistory(t, reg, "relay", 1)
		h.mustTask()
		h.append(sig("next", `"a"`, ""))
		live := append([]int(nil), lengths...)
		lengths = nil
		res := h.mustTask()
		require.True(t, res.Closed)
		require.Equal(t, []int{1}, live)
		require.Equal(t, []int{1, 2}, lengths, "1 before the signal, 2 once it was delivered")
		lengths = nil
		_, err := h.reg.RunWorkflowTask(t.Context(), harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop())
		require.NoError(t, err)
		require.Equal(t, []int{1, 2}, lengths, "a replay of the closed history sees the same")
	})

	t.Run("ShouldContinueAsNewAtTheSoftCap", func(t *testing.T) {
		h := newHistory(t, reg, "capped", 0)
		for range harvest.ContinueAsNewSuggestedLength {
			h.append(sig("next", `"x"`, ""))
		}
		res := h.mustTask()
		d := data[harvest.WorkflowContinuedAsNewData](t, res.Commands[len(res.Commands)-1])
		require.JSONEq(t, `9999`, string(d.Input), "events 0..9999 seen: 10,000, the cap")
		require.Len(t, d.CarriedSignals, 1, "the signal after the cap was not delivered")
	})

	t.Run("AnotherInputTypeFailsTheRun", func(t *testing.T) {
		res := newHistory(t, reg, "wrong_type", 0).mustTask()
		last := res.Commands[len(res.Commands)-1]
		require.Equal(t, harvest.EventWorkflowFailed, last.Type)
		f := data[harvest.WorkflowFailedData](t, last)
		require.Equal(t, "invalid_continue_as_new", f.Error.Type)
		require.Contains(t, f.Error.Message, "continues as new with a string input, its input is int")
	})

	t.Run("TypedMethod", func(t *testing.T) {
		res := newHistory(t, reg, "typed", 4).mustTask()
		d := data[harvest.WorkflowContinuedAsNewData](t, res.Commands[len(res.Commands)-1])
		require.JSONEq(t, `5`, string(d.Input))
	})
}
