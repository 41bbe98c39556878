package admin

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScheduleCommands(t *testing.T) {
	spec := json.RawMessage(`{"workflow_name":"noop_chain","interval":1000000000,"overlap":"skip"}`)
	setup := func(t *testing.T) (*fsm, *fsmBundle) {
		t.Helper()
		f, b := testFSM(t)
		b.mustApply(t, f, PutSchedule{ID: "nightly", Spec: spec, At: at(0)})
		return f, b
	}
	t.Run("PutIsGenerationOne", func(t *testing.T) {
		f, _ := setup(t)
		d := f.catalog().Schedules["nightly"]
		require.Equal(t, int64(1), d.Generation)
		require.JSONEq(t, string(spec), string(d.Spec))
		require.False(t, d.Paused || d.Deleted)
		require.True(t, d.CreatedAt.Equal(at(0)))
	})
	t.Run("ALiveScheduleIsNotPutAgain", func(t *testing.T) {
		f, b := setup(t)
		require.ErrorIs(t, b.apply(t, f, PutSchedule{ID: "nightly", Spec: spec, At: at(1)}), ErrScheduleExists)
		require.Equal(t, int64(1), f.catalog().Schedules["nightly"].Generation)
	})
	t.Run("PauseAndResume", func(t *testing.T) {
		f, b := setup(t)
		b.mustApply(t, f, SetSchedulePaused{ID: "nightly", Paused: true, At: at(1)})
		require.True(t, f.catalog().Schedules["nightly"].Paused)
		b.mustApply(t, f, SetSchedulePaused{ID: "nightly", Paused: false, At: at(2)})
		d := f.catalog().Schedules["nightly"]
		require.False(t, d.Paused)
		require.True(t, d.UpdatedAt.Equal(at(2)))
	})
	t.Run("DeleteKeepsAMarkerAndCreateAgainBumpsTheGeneration", func(t *testing.T) {
		f, b := setup(t)
		b.mustApply(t, f, DeleteSchedule{ID: "nightly", At: at(1)})
		d := f.catalog().Schedules["nightly"]
		require.True(t, d.Deleted)
		require.Equal(t, int64(1), d.Generation)
		require.ErrorIs(t, b.apply(t, f, DeleteSchedule{ID: "nightly", At: at(2)}), ErrUnknownSchedule)
		require.ErrorIs(t, b.apply(t, f, SetSchedulePaused{ID: "nightly", Paused: true, At: at(2)}), ErrUnknownSchedule)
		b.mustApply(t, f, PutSchedule{ID: "nightly", Spec: spec, At: at(3)})
		d = f.catalog().Schedules["nightly"]
		require.Equal(t, int64(2), d.Generation, "a new generation: new fire keys")
		require.False(t, d.Deleted)
	})
	t.Run("EveryChangeIsANewerRevision", func(t *testing.T) {
		// A shard's copy compares revisions so that a lagging replica
		// never undoes a newer change.
		f, b := setup(t)
		put := f.catalog().Schedules["nightly"].Revision
		require.Equal(t, f.catalog().Index, put, "the raft index of the put")
		b.mustApply(t, f, SetSchedulePaused{ID: "nightly", Paused: true, At: at(1)})
		paused := f.catalog().Schedules["nightly"].Revision
		require.Greater(t, paused, put)
		b.mustApply(t, f, DeleteSchedule{ID: "nightly", At: at(2)})
		require.Greater(t, f.catalog().Schedules["nightly"].Revision, paused)
	})
	t.Run("Invalid", func(t *testing.T) {
		f, b := setup(t)
		// Admin.Apply checks a command before it proposes it.
		for _, cmd := range []Command{PutSchedule{Spec: spec}, PutSchedule{ID: "x", Spec: json.RawMessage(`{`)},
			PutSchedule{ID: "x"}, SetSchedulePaused{}, DeleteSchedule{}} {
			require.ErrorIs(t, cmd.check(), ErrInvalidCommand, "%#v", cmd)
		}
		require.ErrorIs(t, b.apply(t, f, SetSchedulePaused{ID: "none", At: at(1)}), ErrUnknownSchedule)
	})
	t.Run("SnapshotRoundTrip", func(t *testing.T) {
		f, b := setup(t)
		b.mustApply(t, f, PutSchedule{ID: "gone", Spec: spec, At: at(1)}, DeleteSchedule{ID: "gone", At: at(2)})
		snap, err := f.Snapshot()
		require.NoError(t, err)
		sink := &memSink{}
		require.NoError(t, snap.Persist(sink))
		dst, _ := testFSM(t)
		require.NoError(t, dst.Restore(io.NopCloser(&sink.buf)))
		require.Equal(t, f.catalog().Schedules, dst.catalog().Schedules)
		require.True(t, dst.catalog().Schedules["gone"].Deleted, "the deletion marker survives a snapshot")
	})
	t.Run("EncodingRoundTrip", func(t *testing.T) {
		for _, cmd := range []Command{PutSchedule{ID: "a", Spec: spec, Paused: true, At: at(0)},
			SetSchedulePaused{ID: "a", Paused: true, At: at(1)}, DeleteSchedule{ID: "a", At: at(2)}} {
			data, err := encodeCommand(cmd)
			require.NoError(t, err)
			got, err := decodeCommand(data)
			require.NoError(t, err)
			require.Equal(t, cmd, got)
		}
	})
	t.Run("ThePublishedCopyIsNotShared", func(t *testing.T) {
		f, b := setup(t)
		before := f.catalog()
		b.mustApply(t, f, DeleteSchedule{ID: "nightly", At: at(1)})
		require.False(t, before.Schedules["nightly"].Deleted)
	})
}
