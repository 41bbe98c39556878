package engine

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/internal/pgtest"
)

// TestWhichExecutionUpdatesAreHOT runs the write set's executions UPDATE
// on a fresh shard and reads, in the same transaction, whether PostgreSQL
// made it HOT (no index entry written). Appends of eager workflow tasks,
// which run inside start and completion batches, change no indexed
// column; closes change state (the listing index) and the workflow loop's
// wakes and clears change wf_task_due_at (the due-task index).
func TestWhichExecutionUpdatesAreHOT(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := ctxT(t)

	t.Run("TableLeavesRoomOnItsPages", func(t *testing.T) {
		var opts []string
		require.NoError(t, pool.QueryRow(ctx,
			`SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'harvest_executions'::regclass`).Scan(&opts))
		require.Contains(t, opts, "fillfactor=80")
	})

	// The room is what makes the appends HOT: a run in the middle of a bulk
	// insert sits on a page filled to the fillfactor by its neighbours.
	t.Run("EagerAppendOnAFilledPage", func(t *testing.T) {
		_, err := pool.Exec(ctx, `
			INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, next_event_id)
			SELECT gen_random_uuid(), 'hot-filled', 'filled-' || i, 'RUNNING', 3 FROM generate_series(1, 400) AS i`)
		require.NoError(t, err)
		var id uuid.UUID
		var block int64
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT execution_id, (ctid::text::point)[0]::bigint FROM harvest_executions
			 WHERE workflow_name = 'hot-filled' ORDER BY ctid OFFSET 200 LIMIT 1`).Scan(&id, &block))
		var neighbours int
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT count(*) FROM harvest_executions WHERE (ctid::text::point)[0]::bigint = $1`, block).Scan(&neighbours))
		require.Greater(t, neighbours, 10, "the run shares its page")

		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, hot0 := counts(t, tx)
		_, err = updateRuns(ctx, tx, &store.RunUpdates{
			IDs: []uuid.UUID{id}, Next: []int64{5}, Appended: []bool{true}, Wake: []bool{false}, Clear: []bool{false},
			Closes: []bool{false}, Release: []bool{false}, States: []*string{nil}, Outputs: []*string{nil}, Errs: []*string{nil},
			Cont: []uuid.UUID{uuid.Nil},
		})
		require.NoError(t, err)
		_, hot := counts(t, tx)
		require.EqualValues(t, 1, hot-hot0, "no room left on the run's page for its new version")
	})

	cases := []struct {
		name                          string
		due                           bool // a workflow task is due before the update
		appended, wake, clear, closes bool
		state, output                 *string
		hot                           bool
	}{
		{name: "EagerAppend", appended: true, hot: true},
		{name: "EagerTaskAppend", appended: true, clear: true, hot: true},
		{name: "AppendWhileATaskIsDue", due: true, appended: true, hot: true},
		{name: "WakeOfAnIdleRun", appended: true, wake: true},
		{name: "ClearOfADueTask", due: true, appended: true, clear: true},
		{name: "Close", appended: true, clear: true, closes: true, state: ptr(StateCompleted), output: ptr(`{"ok": true}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := uuid.New()
			_, err := pool.Exec(ctx, `
				INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, next_event_id, wf_task_due_at)
				VALUES ($1, 'hot', $2, 'RUNNING', 3, CASE WHEN $3 THEN now() - interval '1 second' END)`,
				id, id.String(), c.due)
			require.NoError(t, err)

			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			// The counters hold this backend's unflushed counts too: compare.
			updated0, hot0 := counts(t, tx)
			tag, err := updateRuns(ctx, tx, &store.RunUpdates{
				IDs: []uuid.UUID{id}, Next: []int64{5}, Appended: []bool{c.appended}, Wake: []bool{c.wake}, Clear: []bool{c.clear},
				Closes: []bool{c.closes}, Release: []bool{false}, States: []*string{c.state}, Outputs: []*string{c.output},
				Errs: []*string{nil}, Cont: []uuid.UUID{uuid.Nil},
			})
			require.NoError(t, err)
			require.EqualValues(t, 1, tag.RowsAffected())

			updated, hot := counts(t, tx)
			require.EqualValues(t, 1, updated-updated0)
			if c.hot {
				require.EqualValues(t, 1, hot-hot0, "the update wrote index entries")
			} else {
				require.EqualValues(t, 0, hot-hot0, "an indexed column changed, yet the update was HOT")
			}
			require.NoError(t, tx.Rollback(ctx))
		})
	}
}

// counts reads the backend's updates and HOT updates of harvest_executions.
func counts(t *testing.T, tx pgx.Tx) (updated, hot int64) {
	t.Helper()
	require.NoError(t, tx.QueryRow(ctxT(t), `
		SELECT pg_stat_get_xact_tuples_updated('harvest_executions'::regclass),
		       pg_stat_get_xact_tuples_hot_updated('harvest_executions'::regclass)`).Scan(&updated, &hot))
	return updated, hot
}

func ptr[T any](v T) *T { return &v }

// updateRuns sends the executions' UPDATE of a write set for u alone.
func updateRuns(ctx context.Context, tx pgx.Tx, u *store.RunUpdates) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	store.QueueUpdateRuns(b, u, false)
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err != nil {
		_ = br.Close()
		return tag, err
	}
	return tag, br.Close()
}
