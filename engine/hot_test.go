package engine

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgtest"
)

// TestExecutionUpdatesAreHOT runs the write set's executions UPDATE on a
// fresh shard and reads, in the same transaction, how many of its row
// updates PostgreSQL made HOT (no index entry written). An index on a
// column the statement sets, like the state index migration 005 dropped,
// makes them full updates.
func TestExecutionUpdatesAreHOT(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := ctxT(t)

	t.Run("TableLeavesRoomOnItsPages", func(t *testing.T) {
		var opts []string
		require.NoError(t, pool.QueryRow(ctx,
			`SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'harvest_executions'::regclass`).Scan(&opts))
		require.Contains(t, opts, "fillfactor=80")
	})

	cases := []struct {
		name                          string
		appended, wake, clear, closes bool
		state, output, errInfo        *string
	}{
		{name: "Append", appended: true},
		{name: "Close", appended: true, clear: true, closes: true,
			state: ptr(StateCompleted), output: ptr(`{"ok": true}`)},
		{name: "Failure", appended: true, clear: true, closes: true,
			state: ptr(StateFailed), errInfo: ptr(`{"message": "boom"}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := uuid.New()
			_, err := pool.Exec(ctx, `
				INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, next_event_id)
				VALUES ($1, 'hot', $2, 'RUNNING', 3)`, id, id.String())
			require.NoError(t, err)

			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			// The counters hold this backend's unflushed counts too: compare.
			updated0, hot0 := counts(t, tx)
			tag, err := tx.Exec(ctx, updateExecutions,
				[]uuid.UUID{id}, []int64{5}, []bool{c.appended}, []bool{c.wake}, []bool{c.clear},
				[]bool{c.closes}, []bool{false}, []*string{c.state}, []*string{c.output}, []*string{c.errInfo})
			require.NoError(t, err)
			require.EqualValues(t, 1, tag.RowsAffected())

			updated, hot := counts(t, tx)
			require.EqualValues(t, 1, updated-updated0)
			require.EqualValues(t, 1, hot-hot0, "the update wrote index entries")

			var state string
			require.NoError(t, tx.QueryRow(ctx,
				`SELECT state FROM harvest_executions WHERE execution_id = $1`, id).Scan(&state))
			if c.state != nil {
				require.Equal(t, *c.state, state)
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
