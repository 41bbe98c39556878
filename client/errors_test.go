package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

func TestStartRefusalCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		a     answer
		class error
	}{
		{"Gated", answer{status: 503, body: `{"error":"admission blocked","code":"admission_blocked","gate_id":"g1","reason":"r"}`}, client.ErrGated},
		{"InvalidInput", answer{status: 422, body: `{"error":"bad","code":"invalid_input","violations":[{"path":"/user_id","message":"must be >= 1"}]}`},
			client.ErrInvalidInput},
		{"CallbackRefused", answer{status: 422, body: `{"error":"blocked address","code":"callback_refused","url":"http://10.0.0.1/"}`},
			client.ErrCallbackRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := script(t, tc.a)
			_, err := client.New(s.srv.URL, client.WithoutRetries()).Start(ctxT(t), "typed", client.StartRequest{})
			require.ErrorIs(t, err, tc.class)
			for _, other := range []error{client.ErrGated, client.ErrInvalidInput, client.ErrCallbackRefused, client.ErrUnavailable,
				client.ErrInvalid, client.ErrShardUnreachable} {
				if other != tc.class {
					require.NotErrorIs(t, err, other)
				}
			}
		})
	}

	t.Run("Violations", func(t *testing.T) {
		t.Parallel()
		s := script(t, answer{status: 422, body: `{"error":"bad","code":"invalid_input","violations":[{"path":"/user_id","message":"must be >= 1"},{"path":"","message":"x"}]}`})
		_, err := client.New(s.srv.URL).Start(ctxT(t), "typed", client.StartRequest{})
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, []client.Violation{{Path: "/user_id", Message: "must be >= 1"}, {Path: "", Message: "x"}}, apiErr.Violations())
		require.Nil(t, (&client.Error{}).Violations())
	})
}
