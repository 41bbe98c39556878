package harvest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

type approval struct {
	By     string `json:"by"`
	Amount int    `json:"amount"`
}

func TestValidateSignal(t *testing.T) {
	t.Parallel()
	approvedSig := harvest.NewSignal[approval]("approved")
	countSig := harvest.NewSignal[int]("count")
	declares := harvest.NewWorkflow("declares", func(harvest.Context, int) (int, error) { return 0, nil }).
		WithSignals(approvedSig, countSig)
	open := harvest.NewWorkflow("open", func(harvest.Context, int) (int, error) { return 0, nil })
	reg := harvest.NewRegistry().MustRegister(declares, open)

	for _, tc := range []struct {
		name, workflow, signal, payload string
		want                            error
		inMessage                       []string
	}{
		{name: "DeclaredAndDecodes", workflow: "declares", signal: "approved", payload: `{"by":"ann","amount":3}`},
		{name: "UnknownFieldsDecodeAsReceiveDoes", workflow: "declares", signal: "approved", payload: `{"extra":1}`},
		{name: "EmptyAndNullAreTheZeroValue", workflow: "declares", signal: "count", payload: ``},
		{name: "Null", workflow: "declares", signal: "count", payload: `null`},
		{name: "Undeclared", workflow: "declares", signal: "aproved", payload: `{}`, want: harvest.ErrUnknownSignal,
			inMessage: []string{`"aproved"`, "approved, count"}},
		{name: "WrongType", workflow: "declares", signal: "approved", payload: `"yes"`, want: harvest.ErrInvalidPayload,
			inMessage: []string{`"approved"`, "harvest_test.approval", "cannot unmarshal string"}},
		{name: "WrongFieldType", workflow: "declares", signal: "approved", payload: `{"amount":"3"}`, want: harvest.ErrInvalidPayload,
			inMessage: []string{"amount", "of type int"}},
		{name: "NoDeclarationsAcceptAnything", workflow: "open", signal: "whatever", payload: `"x"`},
		{name: "UnregisteredWorkflowAcceptsAnything", workflow: "gone", signal: "whatever", payload: `1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := reg.ValidateSignal(tc.workflow, tc.signal, json.RawMessage(tc.payload))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			for _, s := range tc.inMessage {
				require.Contains(t, err.Error(), s)
			}
		})
	}

	t.Run("TypedErrors", func(t *testing.T) {
		var unknown *harvest.UnknownSignalError
		require.ErrorAs(t, reg.ValidateSignal("declares", "nope", nil), &unknown)
		require.Equal(t, []string{"approved", "count"}, unknown.Declared)
		var payload *harvest.PayloadError
		require.ErrorAs(t, reg.ValidateSignal("declares", "count", json.RawMessage(`"1"`)), &payload)
		require.Equal(t, "int", payload.Type)
	})

	t.Run("DeclaringANameTwiceFailsRegistration", func(t *testing.T) {
		twice := harvest.NewWorkflow("twice", func(harvest.Context, int) (int, error) { return 0, nil }).
			WithSignals(countSig, harvest.NewSignal[string]("count"))
		require.Error(t, harvest.NewRegistry().Register(twice))
	})
}
