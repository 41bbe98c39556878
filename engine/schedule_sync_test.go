package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSyncSchedule: the shard's copy of a catalog definition follows the
// catalog: the first sync creates it, a repeat changes nothing (the
// cursor and fires stay), pause and resume carry over, a deletion stops
// it, and a newer generation starts over under its own fire keys while an
// older one is ignored.
func TestSyncSchedule(t *testing.T) {
	t.Parallel()
	spec, err := json.Marshal(ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *"})
	require.NoError(t, err)
	def := func(gen int64, paused, deleted bool) ScheduleDef {
		d := ScheduleDef{ID: "cat", Spec: spec, Generation: gen, Paused: paused, Deleted: deleted}
		if deleted {
			d.Spec = nil
		}
		return d
	}
	sync := func(t *testing.T, sb *scheduleBundle, d ScheduleDef) bool {
		t.Helper()
		changed, err := sb.e.SyncSchedule(ctxT(t), d)
		require.NoError(t, err)
		return changed
	}
	t.Run("FollowsTheCatalog", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		require.True(t, sync(t, sb, def(1, false, false)), "created")
		sb.clock.advance(time.Minute)
		fires := waitFires(t, sb.e, "cat", 1, false)
		require.Equal(t, ScheduleFireKey("cat", 1, sb.minute(1)), fires[0].Key)
		require.False(t, sync(t, sb, def(1, false, false)), "a repeat changes nothing")
		got, err := sb.e.GetSchedule(ctxT(t), "cat")
		require.NoError(t, err)
		require.Equal(t, sb.minute(1), got.Cursor.UTC(), "the cursor stays")
		require.Len(t, got.Fires, 1, "the fires stay")

		require.True(t, sync(t, sb, def(1, true, false)), "paused")
		got, err = sb.e.GetSchedule(ctxT(t), "cat")
		require.NoError(t, err)
		require.True(t, got.Paused)
		require.True(t, sync(t, sb, def(1, false, false)), "resumed")

		require.True(t, sync(t, sb, def(1, false, true)), "deleted")
		_, err = sb.e.GetSchedule(ctxT(t), "cat")
		require.ErrorIs(t, err, ErrNotFound)
		require.False(t, sync(t, sb, def(1, false, true)), "deleted once")

		require.True(t, sync(t, sb, def(2, false, false)), "created again: generation 2")
		require.False(t, sync(t, sb, def(1, false, false)), "an older generation is ignored")
		sb.clock.advance(time.Minute)
		fires = waitFires(t, sb.e, "cat", 1, false)
		require.Equal(t, ScheduleFireKey("cat", 2, sb.minute(2)), fires[0].Key, "its own fire keys")
		require.Equal(t, 1, runsPerKey(t, sb.pool)[fires[0].Key])
	})
	t.Run("AnOlderReplicaDoesNotUndoAPause", func(t *testing.T) {
		// The owner of the schedules shard paused it through the leader
		// (catalog revision 7) and copied that; its own replica still
		// holds revision 5 (not paused) until it applies the entry, and
		// every read, trigger and sync loop tick copies the replica.
		t.Parallel()
		sb := setupSchedules(t)
		at := func(rev uint64, paused bool) ScheduleDef {
			d := def(1, paused, false)
			d.Revision = rev
			return d
		}
		require.True(t, sync(t, sb, at(5, false)), "created")
		require.True(t, sync(t, sb, at(7, true)), "paused")
		require.False(t, sync(t, sb, at(5, false)), "an older revision changes nothing")
		got, err := sb.e.GetSchedule(ctxT(t), "cat")
		require.NoError(t, err)
		require.True(t, got.Paused, "still paused")
		require.True(t, sync(t, sb, at(9, false)), "a newer resume")
		require.False(t, sync(t, sb, at(7, true)), "the older pause changes nothing")
		got, err = sb.e.GetSchedule(ctxT(t), "cat")
		require.NoError(t, err)
		require.False(t, got.Paused, "still resumed")
	})
	t.Run("AnInvalidSpecIsRefused", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		bad, err := json.Marshal(ScheduleSpec{WorkflowName: "no-such-workflow", Cron: "* * * * *"})
		require.NoError(t, err)
		_, err = sb.e.SyncSchedule(ctxT(t), ScheduleDef{ID: "bad", Spec: bad, Generation: 1})
		require.ErrorIs(t, err, ErrUnknownWorkflow)
		_, err = sb.e.NormalizeSchedule("bad id!", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *"})
		require.ErrorIs(t, err, ErrInvalidArgument)
	})
}
