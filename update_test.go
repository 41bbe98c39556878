package harvest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

var (
	addUpdate = harvest.NewUpdate[int, int]("add")
	stop      = harvest.NewSignal[string]("stop")
	ready     = harvest.NewSignal[string]("ready")
	// counter adds what its add updates double (an activity) to its
	// total, which a validator keeps from going down; stop ends it.
	counter = harvest.NewWorkflow("counter", func(ctx harvest.Context, late bool) (int, error) {
		total := 0
		if late { // the handler is registered only once ready arrived
			if _, err := ready.Receive(ctx); err != nil {
				return 0, err
			}
		}
		addUpdate.SetHandler(ctx, func(ctx harvest.Context, n int) (int, error) {
			d, err := double.Execute(ctx, n).Get(ctx)
			total += d
			return total, err
		}, func(n int) error {
			if n < 0 {
				return errors.New("the total only goes up")
			}
			return nil
		})
		if _, err := stop.Receive(ctx); err != nil {
			return 0, err
		}
		if total < 100 {
			return 0, harvest.ContinueAsNew(ctx, late)
		}
		return total, nil
	})
)

// updateSignal is the signal an accepted update arrives as.
func updateSignal(t *testing.T, id string, args any) harvest.Command {
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	payload, err := json.Marshal(harvest.UpdateRequest{UpdateID: id, Name: addUpdate.Name(), Args: raw})
	require.NoError(t, err)
	return sig(harvest.UpdateSignal, string(payload), harvest.UpdateKeyPrefix+id)
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, late bool) *history {
		t.Helper()
		h := newHistory(t, harvest.NewRegistry().MustRegister(double, counter), "counter", late)
		h.mustTask()
		return h
	}
	validate := func(h *history, args string) error {
		_, err := h.reg.RunQuery(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events},
			harvest.UpdateQueryPrefix+addUpdate.Name(), json.RawMessage(args))
		return err
	}

	t.Run("TheHandlerRunsItsActivityAndAnswers", func(t *testing.T) {
		t.Parallel()
		h := setup(t, false)
		h.append(updateSignal(t, "u1", 3))
		res := h.mustTask()
		require.Len(t, res.Commands, 1)
		sched := data[harvest.ActivityScheduledData](t, res.Commands[0])
		require.Equal(t, "double", sched.Name)
		h.append(harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{ActivityID: sched.ActivityID, Output: json.RawMessage("6")}))
		res = h.mustTask()
		require.Len(t, res.Commands, 1)
		require.Equal(t, harvest.EventUpdateCompleted, res.Commands[0].Type)
		done := data[harvest.UpdateCompletedData](t, res.Commands[0])
		require.Equal(t, "u1", done.UpdateID)
		require.JSONEq(t, "6", string(done.Output))
		require.Nil(t, done.Error)
		require.Empty(t, h.mustTask().Commands, "a replay issues nothing new")
	})

	t.Run("TheValidatorRunsAsAQuery", func(t *testing.T) {
		t.Parallel()
		h := setup(t, false)
		require.NoError(t, validate(h, "2"))
		require.ErrorIs(t, validate(h, "-1"), harvest.ErrUpdateRejected)
		require.ErrorIs(t, validate(h, `"two"`), harvest.ErrQueryArgs)
		_, err := h.reg.RunQuery(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events},
			harvest.UpdateQueryPrefix+"nope", nil)
		require.ErrorIs(t, err, harvest.ErrUnknownQuery)
	})

	t.Run("AnUpdateWaitsForItsHandler", func(t *testing.T) {
		t.Parallel()
		h := setup(t, true)
		_, err := h.reg.RunQuery(context.Background(), harvest.WorkflowTask{Info: h.info, History: h.events},
			harvest.UpdateQueryPrefix+addUpdate.Name(), json.RawMessage("1"))
		require.ErrorIs(t, err, harvest.ErrUnknownQuery, "no handler yet: the engine refuses it")
		h.append(updateSignal(t, "early", 5))
		require.Empty(t, h.mustTask().Commands, "delivered before its handler: it waits")
		h.append(sig("ready", `"go"`, ""))
		res := h.mustTask()
		require.Len(t, res.Commands, 1)
		require.Equal(t, harvest.EventActivityScheduled, res.Commands[0].Type, "the handler ran once registered")
	})

	t.Run("AContinueAsNewAnswersTheUpdatesItsHandlersRun", func(t *testing.T) {
		t.Parallel()
		h := setup(t, false)
		h.append(updateSignal(t, "running", 4))
		h.mustTask()
		h.append(updateSignal(t, "also", 7), sig("stop", `"now"`, ""))
		res := h.mustTask()
		require.True(t, res.Closed)
		var types []harvest.EventType
		for _, c := range res.Commands {
			types = append(types, c.Type)
		}
		require.Equal(t, []harvest.EventType{harvest.EventActivityScheduled, harvest.EventUpdateCompleted,
			harvest.EventUpdateCompleted, harvest.EventWorkflowContinuedAsNew}, types)
		for i, id := range []string{"also", "running"} {
			d := data[harvest.UpdateCompletedData](t, res.Commands[1+i])
			require.Equal(t, id, d.UpdateID)
			require.NotNil(t, d.Error)
			require.Contains(t, d.Error.Message, "continued as new")
		}
		require.Empty(t, h.mustTask().Commands, "a replay issues nothing new")
	})

	t.Run("AContinueAsNewCarriesAnUpdateWaitingForItsHandler", func(t *testing.T) {
		t.Parallel()
		handless := harvest.NewWorkflow("handless", func(ctx harvest.Context, _ int) (int, error) {
			if _, err := stop.Receive(ctx); err != nil {
				return 0, err
			}
			return 0, harvest.ContinueAsNew(ctx, 1)
		})
		h := newHistory(t, harvest.NewRegistry().MustRegister(handless), "handless", 0)
		h.mustTask()
		h.append(updateSignal(t, "carried", 1), sig("stop", `"x"`, ""))
		res := h.mustTask()
		require.True(t, res.Closed)
		can := data[harvest.WorkflowContinuedAsNewData](t, res.Commands[0])
		require.Len(t, can.CarriedSignals, 1)
		require.Equal(t, harvest.UpdateSignal, can.CarriedSignals[0].SignalName)
		require.Equal(t, harvest.UpdateKeyPrefix+"carried", can.CarriedSignals[0].IdempotencyKey)
	})
}
