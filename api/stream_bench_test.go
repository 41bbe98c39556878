package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine"
)

// BenchmarkEventsStream: one client streams a closed run's whole history
// (its events, then closed), small events and 1 MiB ones; bytes/s is the
// stream's throughput (docs/performance.md).
func BenchmarkEventsStream(b *testing.B) {
	for _, c := range []struct {
		name    string
		signals int
		size    int
	}{{"2000x100B", 2000, 100}, {"20x1MiB", 20, 1 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			tb := setup(b)
			r := tb.do(b, "POST", "/workflows/block/start", map[string]any{})
			require.Equal(b, http.StatusCreated, r.Status, "%s", r.Raw)
			id := uuid.MustParse(r.Body["execution_id"].(string))
			payload, err := json.Marshal(strings.Repeat("x", c.size))
			require.NoError(b, err)
			for range c.signals {
				_, err := tb.engine.Signal(context.Background(), engine.SignalRequest{ExecutionID: id, SignalName: "item", Payload: payload})
				require.NoError(b, err)
			}
			require.Equal(b, http.StatusAccepted, tb.do(b, "POST", fmt.Sprintf("/workflows/%s/signal/go", id), `"now"`).Status)
			_, err = tb.engine.Result(context.Background(), id, ResultWaitMaxDefault)
			require.NoError(b, err)
			url := tb.url + "/workflows/" + id.String() + "/events/stream"
			b.ResetTimer()
			for b.Loop() {
				res, err := http.Get(url)
				require.NoError(b, err)
				n, err := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				require.NoError(b, err)
				b.SetBytes(n)
			}
		})
	}
}
