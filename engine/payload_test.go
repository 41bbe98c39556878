package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// TestCommandPayload: the engine reads a command's payload from the value
// it was made from when there is one, and decodes Data otherwise; both
// give the same value.
func TestCommandPayload(t *testing.T) {
	t.Parallel()
	d := harvest.ActivityScheduledData{ActivityID: "1", Name: "charge", Input: json.RawMessage(`{"n":1}`), IdempotencyKey: "k",
		Options: harvest.ActivityOptions{StartToClose: time.Second}}
	made := harvest.NewCommand(harvest.EventActivityScheduled, d)
	cases := []struct {
		name string
		cmd  harvest.Command
	}{
		{"MadeInProcess", made},
		{"DataOnly", harvest.Command{Type: made.Type, Data: made.Data}},
		{"PayloadOfAnotherType", harvest.Command{Type: made.Type, Data: made.Data, Payload: harvest.TimerStartedData{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := runs.Payload[harvest.ActivityScheduledData](c.cmd)
			require.NoError(t, err)
			require.Equal(t, d, got)
		})
	}

	t.Run("PayloadIsReadNotData", func(t *testing.T) {
		other := harvest.Command{Type: made.Type, Data: []byte(`{"activity_id": "9"}`), Payload: d}
		got, err := runs.Payload[harvest.ActivityScheduledData](other)
		require.NoError(t, err)
		require.Equal(t, d, got, "the engine decoded Data although the command carried its value")
	})

	t.Run("UndecodableData", func(t *testing.T) {
		_, err := runs.Payload[harvest.ActivityScheduledData](harvest.Command{Type: made.Type, Data: []byte(`{"activity_id": 7}`)})
		require.Error(t, err)
	})
}
