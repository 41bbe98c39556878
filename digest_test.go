package harvest_test

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// pairByKey fans echo out over the keys of in, in the order order puts
// them, and pairs each result with its key: the map iteration of a real
// workflow, with the order made explicit so a test can choose it.
func pairByKey(name string, order func([]string)) *harvest.Workflow[map[string]bool, map[string]string] {
	return harvest.NewWorkflow(name, func(ctx harvest.Context, in map[string]bool) (map[string]string, error) {
		keys := slices.Collect(maps.Keys(in))
		order(keys)
		futures := map[string]harvest.Future[string]{}
		for _, k := range keys {
			futures[k] = echo.Execute(ctx, k)
		}
		out := map[string]string{}
		for _, k := range keys {
			v, err := futures[k].Get(ctx)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	})
}

func ascending(keys []string)  { slices.Sort(keys) }
func descending(keys []string) { slices.Sort(keys); slices.Reverse(keys) }

// pause sleeps for the duration in its input.
func pause(name string) *harvest.Workflow[time.Duration, string] {
	return harvest.NewWorkflow(name, func(ctx harvest.Context, d time.Duration) (string, error) {
		return "slept", harvest.Sleep(ctx, d)
	})
}

// echoInput runs echo once on its input with the given options.
var echoInput = harvest.NewWorkflow("echo-input", func(ctx harvest.Context, in string) (string, error) {
	return echo.Execute(ctx, in).Get(ctx)
})

// recordWith runs the workflow's first task with reg and returns the
// history it leaves.
func recordWith(t *testing.T, reg *harvest.Registry, workflow string, input any) *history {
	t.Helper()
	h := newHistory(t, reg, workflow, input)
	h.mustTask()
	return h
}

// replayWith replays h with the code registered in reg and returns the
// NonDeterminismError it must end with.
func replayWith(t *testing.T, h *history, reg *harvest.Registry) *harvest.NonDeterminismError {
	t.Helper()
	h.reg = reg
	_, err := h.task()
	var nd *harvest.NonDeterminismError
	require.True(t, errors.As(err, &nd), "want a NonDeterminismError, got %v", err)
	return nd
}

func TestArgumentDigests(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, wfs ...harvest.Registrable) *harvest.Registry {
		t.Helper()
		return harvest.NewRegistry().MustRegister(append([]harvest.Registrable{echo}, wfs...)...)
	}

	t.Run("NewCommandsCarryDigests", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t, pairByKey("pair", ascending)), "pair", map[string]bool{"a": true, "b": true})
		res := h.mustTask()
		require.Len(t, res.Commands, 2)
		a := data[harvest.ActivityScheduledData](t, res.Commands[0])
		b := data[harvest.ActivityScheduledData](t, res.Commands[1])
		require.Len(t, a.Digest, 16)
		require.NotEqual(t, a.Digest, b.Digest, "inputs a and b")
	})

	t.Run("FanOutInAnotherOrderIsNonDeterministic", func(t *testing.T) {
		t.Parallel()
		h := recordWith(t, setup(t, pairByKey("pair", ascending)), "pair", map[string]bool{"a": true, "b": true})
		h.append(completed("1", "A"))
		nd := replayWith(t, h, setup(t, pairByKey("pair", descending)))
		require.Equal(t, int64(1), nd.EventID, "the first ActivityScheduled")
		require.Contains(t, nd.Error(), `argument "input" differs`)
		require.Regexp(t, `history digest [0-9a-f]{16}, code digest [0-9a-f]{16}`, nd.Error())
	})

	t.Run("ChangedInputIsNonDeterministic", func(t *testing.T) {
		t.Parallel()
		reg := setup(t, echoInput)
		h := recordWith(t, reg, "echo-input", "a")
		changed := harvest.NewWorkflow("echo-input", func(ctx harvest.Context, _ string) (string, error) {
			return echo.Execute(ctx, "b").Get(ctx)
		})
		nd := replayWith(t, h, setup(t, changed))
		require.Contains(t, nd.Error(), `ActivityScheduled(1 echo): argument "input" differs`)
	})

	t.Run("ChangedOptionsAreNonDeterministic", func(t *testing.T) {
		t.Parallel()
		h := recordWith(t, setup(t, echoInput), "echo-input", "a")
		changed := harvest.NewWorkflow("echo-input", func(ctx harvest.Context, in string) (string, error) {
			return echo.Execute(ctx, in, harvest.ActivityOptions{Queue: "elsewhere"}).Get(ctx)
		})
		nd := replayWith(t, h, setup(t, changed))
		require.Contains(t, nd.Error(), `argument "options" differs`)
	})

	t.Run("ChangedDurationIsNonDeterministic", func(t *testing.T) {
		t.Parallel()
		h := recordWith(t, setup(t, pause("pause")), "pause", time.Minute)
		fixed := harvest.NewWorkflow("pause", func(ctx harvest.Context, _ time.Duration) (string, error) {
			return "slept", harvest.Sleep(ctx, time.Hour)
		})
		nd := replayWith(t, h, setup(t, fixed))
		require.Contains(t, nd.Error(), `TimerStarted(1): argument "duration" differs`)
	})

	t.Run("SameArgumentsReplay", func(t *testing.T) {
		t.Parallel()
		reg := setup(t, pairByKey("pair", ascending))
		h := recordWith(t, reg, "pair", map[string]bool{"a": true, "b": true})
		h.append(completed("2", "B"), completed("1", "A"))
		require.JSONEq(t, `{"a":"A","b":"B"}`, output(t, h.mustTask()))
		replayed(t, h)
	})

	t.Run("HistoryWithoutDigestsReplaysAsBefore", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t, echoInput), "echo-input", "b")
		// Written before digests: no "digest" field, and an input the code
		// no longer passes, which only a digest would catch.
		h.append(harvest.Command{Type: harvest.EventActivityScheduled,
			Data: json.RawMessage(`{"activity_id":"1","name":"echo","input":"a","queue":"default","idempotency_key":"k","options":{}}`)},
			completed("1", "a"))
		require.JSONEq(t, `"a"`, output(t, h.mustTask()))
	})
}

func TestDigestsAreFixed(t *testing.T) {
	t.Parallel()
	// The digests of recorded commands are compared forever: these values
	// must never change.
	tests := []struct {
		name string
		cmd  func(t *testing.T) harvest.Command
		want string
	}{
		{"activity", func(t *testing.T) harvest.Command {
			return recordWith(t, harvest.NewRegistry().MustRegister(echo, echoInput), "echo-input", "a").lastCommand()
		}, "0f568b191e612121"},
		{"timer", func(t *testing.T) harvest.Command {
			return recordWith(t, harvest.NewRegistry().MustRegister(pause("pause")), "pause", time.Minute).lastCommand()
		}, "4cc754d391b69784"},
		{"signal_external", func(t *testing.T) harvest.Command {
			return recordWith(t, harvest.NewRegistry().MustRegister(issuing(signalRun("run-a", digestSig, "x"))), "issuing", "").lastCommand()
		}, "9a4a95f20715d922"},
		{"signal_external_workflow", func(t *testing.T) harvest.Command {
			return recordWith(t, harvest.NewRegistry().MustRegister(issuing(signalWorkflow("w", "id-a", "x"))), "issuing", "").lastCommand()
		}, "8edb82990b7b4b36"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d struct {
				Digest string `json:"digest"`
			}
			require.NoError(t, json.Unmarshal(tt.cmd(t).Data, &d))
			require.Equal(t, tt.want, d.Digest)
		})
	}
}

func (h *history) lastCommand() harvest.Command {
	ev := h.events[len(h.events)-1]
	return harvest.Command{Type: ev.Type, Data: ev.Data}
}
