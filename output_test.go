package harvest_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

type charge struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
	Fees   []fee   `json:"fees,omitempty"`
}

type fee struct {
	Rate float64
}

func TestUnencodableOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		out  any
		want string
	}{
		{"NaN", math.NaN(), `activity "charge": output: json: unsupported value: NaN`},
		{"StructField", charge{ID: "c", Amount: math.Inf(1)}, `activity "charge": output.amount: json: unsupported value: +Inf`},
		{"NestedSliceField", &charge{Fees: []fee{{1}, {math.NaN()}}}, `activity "charge": output.fees[1].Rate: json: unsupported value: NaN`},
		{"MapEntry", map[string]any{"a": 1, "b": make(chan int)}, `activity "charge": output.b: json: unsupported type: chan int`},
		{"Func", func() {}, `activity "charge": output: json: unsupported type: func()`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			act := harvest.NewActivity("charge", func(*harvest.ActivityContext, int) (any, error) { return tc.out, nil })
			reg := harvest.NewRegistry().MustRegister(act)
			ctx := harvest.NewActivityContext(context.Background(), harvest.ActivityInfo{}, nil, zerolog.Nop())
			_, err := reg.RunActivity(ctx, "charge", json.RawMessage(`1`))
			info := harvest.ToErrorInfo(err)
			require.Equal(t, tc.want, info.Message)
			require.True(t, info.NonRetryable, "the same code gives the same value: not retried")
		})
	}

	t.Run("WorkflowOutput", func(t *testing.T) {
		wf := harvest.NewWorkflow("ratio", func(harvest.Context, int) (charge, error) { return charge{Amount: math.NaN()}, nil })
		h := newHistory(t, harvest.NewRegistry().MustRegister(wf), "ratio", 1)
		res := h.mustTask()
		require.Len(t, res.Commands, 1)
		require.Equal(t, harvest.EventWorkflowFailed, res.Commands[0].Type)
		failed := data[harvest.WorkflowFailedData](t, res.Commands[0])
		require.Equal(t, `workflow "ratio": output.amount: json: unsupported value: NaN`, failed.Error.Message)
	})
}
