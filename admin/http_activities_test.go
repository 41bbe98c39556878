package admin

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/httpactivity"
)

func TestHTTPActivityCommands(t *testing.T) {
	act := httpactivity.Config{Name: "charge", URL: "https://pay.example.com/charge",
		Headers: map[string]string{"Authorization": "Bearer sk_x"}, Timeout: 30 * time.Second,
		Retry: &httpactivity.Retry{MaxAttempts: 5, InitialInterval: time.Second}}
	setup := func(t *testing.T) (*fsm, *fsmBundle) {
		t.Helper()
		f, b := testFSM(t)
		b.mustApply(t, f, PutHTTPActivity{Activity: act, At: at(0)})
		return f, b
	}
	t.Run("PutIsPublished", func(t *testing.T) {
		f, _ := setup(t)
		got := f.catalog().HTTPActivities["charge"]
		require.True(t, got.Same(act))
		require.True(t, got.CreatedAt.Equal(at(0)), "created at the command's time")
	})
	t.Run("PutAgainChangesNothing", func(t *testing.T) {
		f, b := setup(t)
		require.NoError(t, b.apply(t, f, PutHTTPActivity{Activity: act.Clone(), At: at(time.Hour)}))
		require.True(t, f.catalog().HTTPActivities["charge"].CreatedAt.Equal(at(0)))
	})
	t.Run("SameNameOtherConfigIsRefused", func(t *testing.T) {
		f, b := setup(t)
		other := act.Clone()
		other.Headers["Authorization"] = "Bearer sk_other"
		require.ErrorIs(t, b.apply(t, f, PutHTTPActivity{Activity: other, At: at(1)}), httpactivity.ErrExists)
		require.Equal(t, "Bearer sk_x", f.catalog().HTTPActivities["charge"].Headers["Authorization"])
	})
	t.Run("Invalid", func(t *testing.T) {
		f, b := setup(t)
		bad := httpactivity.Config{Name: "x", URL: "ftp://example.com"}
		require.ErrorIs(t, b.apply(t, f, PutHTTPActivity{Activity: bad, At: at(1)}), httpactivity.ErrInvalidConfig)
		require.ErrorIs(t, b.apply(t, f, DeleteHTTPActivity{At: at(1)}), ErrInvalidCommand)
	})
	t.Run("CloneCopiesHeaders", func(t *testing.T) {
		f, _ := setup(t)
		c := f.catalog().Clone()
		c.HTTPActivities["charge"].Headers["Authorization"] = "changed"
		require.Equal(t, "Bearer sk_x", f.catalog().HTTPActivities["charge"].Headers["Authorization"])
	})
	t.Run("Delete", func(t *testing.T) {
		f, b := setup(t)
		before := f.catalog()
		b.mustApply(t, f, DeleteHTTPActivity{Name: "charge", At: at(1)})
		require.Empty(t, f.catalog().HTTPActivities)
		require.Contains(t, before.HTTPActivities, "charge", "the published copy is not shared")
		require.ErrorIs(t, b.apply(t, f, DeleteHTTPActivity{Name: "charge", At: at(2)}), httpactivity.ErrUnknown)
	})
	t.Run("EncodingRoundTrip", func(t *testing.T) {
		for _, cmd := range []Command{PutHTTPActivity{Activity: act, At: at(0)}, DeleteHTTPActivity{Name: "charge", At: at(1)}} {
			data, err := encodeCommand(cmd)
			require.NoError(t, err)
			got, err := decodeCommand(data)
			require.NoError(t, err)
			require.Equal(t, cmd, got)
		}
	})
	t.Run("SnapshotRoundTrip", func(t *testing.T) {
		f, _ := setup(t)
		snap, err := f.Snapshot()
		require.NoError(t, err)
		sink := &memSink{}
		require.NoError(t, snap.Persist(sink))
		g, _ := testFSM(t)
		require.NoError(t, g.Restore(io.NopCloser(&sink.buf)))
		require.Equal(t, f.catalog().HTTPActivities, g.catalog().HTTPActivities)
		require.Equal(t, "Bearer sk_x", g.catalog().HTTPActivities["charge"].Headers["Authorization"], "a restored node sends the header")
	})
}
