package migrations_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestVersions(t *testing.T) {
	t.Parallel()
	vs := migrations.Versions()
	require.NotEmpty(t, vs)
	require.Equal(t, 1, vs[0])
	require.IsIncreasing(t, vs)
	ms := migrations.Migrations()
	require.Len(t, ms, len(vs))
	require.Equal(t, "initial", ms[0].Name)
	require.Contains(t, ms[0].SQL, "CREATE TABLE harvest_executions")
}

func TestApplyOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, pgtest.NewEmptyDB(t))

	applied, err := migrations.Applied(ctx, conn)
	require.NoError(t, err)
	require.Empty(t, applied)

	require.NoError(t, migrations.Apply(ctx, conn))
	applied, err = migrations.Applied(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, migrations.Versions(), applied)

	var name string
	var appliedAt time.Time
	require.NoError(t, conn.QueryRow(ctx,
		`SELECT name, applied_at FROM harvest_schema_migrations WHERE version = 1`).Scan(&name, &appliedAt))
	require.Equal(t, "initial", name)
	require.WithinDuration(t, time.Now(), appliedAt, time.Minute)

	var leaseRows int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM harvest_shard_lease`).Scan(&leaseRows))
	require.Equal(t, 1, leaseRows)
}

func TestApplyTwiceIsNoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, pgtest.NewEmptyDB(t))
	require.NoError(t, migrations.Apply(ctx, conn))

	var before time.Time
	require.NoError(t, conn.QueryRow(ctx, `SELECT max(applied_at) FROM harvest_schema_migrations`).Scan(&before))
	require.NoError(t, migrations.Apply(ctx, conn))

	var rows int
	var after time.Time
	require.NoError(t, conn.QueryRow(ctx,
		`SELECT count(*), max(applied_at) FROM harvest_schema_migrations`).Scan(&rows, &after))
	require.Equal(t, len(migrations.Versions()), rows)
	require.Equal(t, before, after)
	var leaseRows int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM harvest_shard_lease`).Scan(&leaseRows))
	require.Equal(t, 1, leaseRows, "initial migration ran once")
}

func TestApplyConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewEmptyDB(t)
	const workers = 4
	conns := make([]*pgx.Conn, workers)
	for i := range conns {
		conns[i] = connect(t, dsn)
	}

	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i, conn := range conns {
		wg.Go(func() { errs[i] = migrations.Apply(ctx, conn) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	rows, err := conns[0].Query(ctx, `SELECT version, count(*) FROM harvest_schema_migrations GROUP BY version ORDER BY version`)
	require.NoError(t, err)
	type versionCount struct {
		Version int
		Count   int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[versionCount])
	require.NoError(t, err)
	require.Len(t, got, len(migrations.Versions()))
	for i, v := range migrations.Versions() {
		require.Equal(t, versionCount{Version: v, Count: 1}, got[i])
	}
}

func TestApplyPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewEmptyDB(t))
	require.NoError(t, err)
	defer pool.Close()

	require.NoError(t, migrations.ApplyPool(ctx, pool))
	applied, err := migrations.Applied(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, migrations.Versions(), applied)

	var held int
	require.NoError(t, pool.QueryRow(ctx,
		`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&held))
	require.Zero(t, held, "advisory lock released")
}

func TestApplyRefusesUnknownVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, pgtest.NewDB(t))
	_, err := conn.Exec(ctx, `INSERT INTO harvest_schema_migrations (version, name) VALUES (999, 'future')`)
	require.NoError(t, err)
	require.ErrorIs(t, migrations.Apply(ctx, conn), migrations.ErrUnknownVersion)
}

func TestEventsAreAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, pgtest.NewDB(t))
	_, err := conn.Exec(ctx, `
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state)
		VALUES ('00000000-0000-0000-0000-000000000001', 'wf', 'id-1', 'RUNNING');
		INSERT INTO harvest_events (execution_id, event_id, event_type, data)
		VALUES ('00000000-0000-0000-0000-000000000001', 0, 'WorkflowStarted', '{}')`)
	require.NoError(t, err)

	for _, sql := range []string{
		`UPDATE harvest_events SET event_type = 'Tampered'`,
		`DELETE FROM harvest_events`,
		`TRUNCATE harvest_events`,
	} {
		_, err = conn.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, sql)
		require.Equal(t, "23001", pgErr.Code, "%s: restrict_violation, got %v", sql, err)
	}

	var eventType string
	require.NoError(t, conn.QueryRow(ctx, `SELECT event_type FROM harvest_events`).Scan(&eventType))
	require.Equal(t, "WorkflowStarted", eventType)
}

func TestLeanStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, pgtest.NewDB(t))
	// targets maps "table.column" to its statistics target, -1 for the
	// server's default, over the tables migration 006 covers.
	targets := func(t *testing.T) map[string]int {
		t.Helper()
		rows, err := conn.Query(ctx, `
			SELECT a.attrelid::regclass::text || '.' || a.attname, coalesce(a.attstattarget, -1)::int
			  FROM pg_attribute a
			 WHERE a.attrelid::regclass::text IN ('harvest_executions', 'harvest_events', 'harvest_tasks',
			           'harvest_start_idempotency', 'harvest_signals', 'harvest_timers', 'harvest_callbacks')
			   AND a.attnum > 0 AND NOT a.attisdropped`)
		require.NoError(t, err)
		out := map[string]int{}
		for rows.Next() {
			var col string
			var target int
			require.NoError(t, rows.Scan(&col, &target))
			out[col] = target
		}
		require.NoError(t, rows.Err())
		require.Len(t, out, 83, "the covered tables' columns (harvest_tasks.last_failed_at: migration 009, cancel_requested: 010, chains: 012, async and async_deadline: 015, flow control: 022, 023, 025, 027, 028)")
		return out
	}
	payloads := map[string]bool{"harvest_executions.input": true, "harvest_executions.output": true,
		"harvest_executions.error": true, "harvest_executions.memo": true, "harvest_events.data": true}

	t.Run("UpSetsTenExceptOnPayloads", func(t *testing.T) {
		for col, target := range targets(t) {
			if payloads[col] {
				require.Zero(t, target, col)
			} else {
				require.Equal(t, 10, target, col)
			}
		}
	})

	t.Run("DownRestoresTheDefault", func(t *testing.T) {
		down, err := os.ReadFile("006_lean_statistics.down.sql")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, string(down))
		require.NoError(t, err)
		for col, target := range targets(t) {
			if payloads[col] {
				require.Zero(t, target, col, "migration 005's targets stay")
			} else {
				require.Equal(t, -1, target, col)
			}
		}
	})
}
