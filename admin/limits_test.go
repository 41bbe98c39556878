package admin

import (
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/flowlimit"
)

func TestLimitCommands(t *testing.T) {
	wf := flowlimit.Limit{Kind: flowlimit.Workflow, Name: "report", MaxRunning: 2, KeyPointer: "/customer"}
	act := flowlimit.Limit{Kind: flowlimit.Activity, Name: "report", PerSecond: 50, Burst: 5, RateKeyPointer: "/provider"}
	setup := func(t *testing.T) (*fsm, *fsmBundle) {
		t.Helper()
		f, b := testFSM(t)
		b.mustApply(t, f, PutLimit{Limit: wf, At: at(0)}, PutLimit{Limit: act, At: at(0)})
		return f, b
	}
	t.Run("PutIsPublished", func(t *testing.T) {
		f, _ := setup(t)
		got := f.catalog().Limits
		require.Len(t, got, 2, "a workflow and an activity of one name are two limits")
		require.True(t, got["workflow/report"].Same(wf))
		require.True(t, got["activity/report"].Same(act))
		require.True(t, got["workflow/report"].UpdatedAt.Equal(at(0)), "updated at the command's time")
	})
	t.Run("PutAgainChangesNothing", func(t *testing.T) {
		f, b := setup(t)
		b.mustApply(t, f, PutLimit{Limit: wf, At: at(time.Hour)})
		require.True(t, f.catalog().Limits["workflow/report"].UpdatedAt.Equal(at(0)))
	})
	t.Run("PutReplaces", func(t *testing.T) {
		f, b := setup(t)
		lift := flowlimit.Limit{Kind: flowlimit.Workflow, Name: "report"}
		b.mustApply(t, f, PutLimit{Limit: lift, At: at(time.Hour)})
		got := f.catalog().Limits["workflow/report"]
		require.True(t, got.Same(lift), "the zero limit is kept: it lifts the declared one")
		require.True(t, got.UpdatedAt.Equal(at(time.Hour)))
	})
	t.Run("Invalid", func(t *testing.T) {
		f, b := setup(t)
		for _, bad := range []flowlimit.Limit{
			{Kind: "shard", Name: "x"},
			{Kind: flowlimit.Workflow, Name: ""},
			{Kind: flowlimit.Workflow, Name: "x\x00"},
			{Kind: flowlimit.Workflow, Name: "report", MaxRunning: -1},
			{Kind: flowlimit.Workflow, Name: "report", MaxRunning: 1, KeyPointer: "customer"},
			{Kind: flowlimit.Workflow, Name: "report", PerSecond: 1},
			{Kind: flowlimit.Activity, Name: "report", PerSecond: 1e7},
		} {
			require.ErrorIs(t, b.apply(t, f, PutLimit{Limit: bad, At: at(1)}), flowlimit.ErrInvalid, "%+v", bad)
		}
		// JSON has no NaN: Admin.Apply checks a command before it encodes it.
		for _, rate := range []float64{math.NaN(), math.Inf(1)} {
			bad := PutLimit{Limit: flowlimit.Limit{Kind: flowlimit.Activity, Name: "report", PerSecond: rate}}
			require.ErrorIs(t, bad.check(), flowlimit.ErrInvalid)
		}
		require.ErrorIs(t, b.apply(t, f, DeleteLimit{Kind: flowlimit.Workflow, At: at(1)}), ErrInvalidCommand)
		require.ErrorIs(t, b.apply(t, f, DeleteLimit{Kind: "shard", Name: "report", At: at(1)}), ErrInvalidCommand)
		require.True(t, f.catalog().Limits["workflow/report"].Same(wf), "nothing refused changed the catalog")
	})
	t.Run("Delete", func(t *testing.T) {
		f, b := setup(t)
		before := f.catalog()
		b.mustApply(t, f, DeleteLimit{Kind: flowlimit.Workflow, Name: "report", At: at(1)})
		require.NotContains(t, f.catalog().Limits, "workflow/report")
		require.Contains(t, f.catalog().Limits, "activity/report", "the activity's limit of the same name stays")
		require.Contains(t, before.Limits, "workflow/report", "the published copy is not shared")
		require.ErrorIs(t, b.apply(t, f, DeleteLimit{Kind: flowlimit.Workflow, Name: "report", At: at(2)}), flowlimit.ErrUnknown)
	})
	t.Run("EncodingRoundTrip", func(t *testing.T) {
		for _, cmd := range []Command{PutLimit{Limit: act, At: at(0)}, DeleteLimit{Kind: flowlimit.Activity, Name: "report", At: at(1)}} {
			data, err := encodeCommand(cmd)
			require.NoError(t, err)
			require.Equal(t, byte(cmd.Type()), data[0])
			got, err := decodeCommand(data)
			require.NoError(t, err)
			require.Equal(t, cmd, got)
		}
		require.Equal(t, "put_limit", CmdPutLimit.String())
		require.Equal(t, "delete_limit", CmdDeleteLimit.String())
	})
	t.Run("SnapshotRoundTrip", func(t *testing.T) {
		f, _ := setup(t)
		snap, err := f.Snapshot()
		require.NoError(t, err)
		sink := &memSink{}
		require.NoError(t, snap.Persist(sink))
		g, _ := testFSM(t)
		require.NoError(t, g.Restore(io.NopCloser(&sink.buf)))
		require.Len(t, g.catalog().Limits, 2)
		require.Equal(t, f.catalog().Limits, g.catalog().Limits, "a restored node enforces the same limits")
	})
}
