package harvest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRegistrationRetryOption(t *testing.T) {
	t.Run("KeptThroughHistory", func(t *testing.T) {
		o := ActivityOptions{}.WithDefaults()
		o.registrationRetry = true
		raw, err := json.Marshal(o.Stored())
		require.NoError(t, err)
		require.Contains(t, string(raw), `"registration_retry":true`)
		var back ActivityOptions
		require.NoError(t, json.Unmarshal(raw, &back))
		require.True(t, back.RegistrationRetry())
	})
	t.Run("AbsentFromOtherOptions", func(t *testing.T) {
		raw, err := json.Marshal(ActivityOptions{}.WithDefaults())
		require.NoError(t, err)
		require.NotContains(t, string(raw), "registration_retry", "histories of other activities are written as before")
	})
	t.Run("SetOnlyWithoutARetryPolicy", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			defaults []ActivityOptions
			call     []ActivityOptions
			want     bool
		}{
			{"None", nil, nil, true},
			{"CallTimeoutOnly", nil, []ActivityOptions{{StartToClose: 5}}, true},
			{"CallRetry", nil, []ActivityOptions{{Retry: Exponential(2, 1)}}, false},
			{"DefaultRetry", []ActivityOptions{{Retry: Exponential(2, 1)}}, nil, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a := NewRemoteActivity[int, int]("charge", tc.defaults...)
				require.Equal(t, tc.want, a.options(tc.call).RegistrationRetry())
			})
		}
	})
}
