package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func tableExists(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, table string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, q.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok))
	return ok
}

func TestNewPoolGivesIsolatedMigratedDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := pgtest.NewPool(t), pgtest.NewPool(t)

	var nameA, nameB string
	require.NoError(t, a.QueryRow(ctx, `SELECT current_database()`).Scan(&nameA))
	require.NoError(t, b.QueryRow(ctx, `SELECT current_database()`).Scan(&nameB))
	require.NotEqual(t, nameA, nameB)
	require.True(t, tableExists(t, a, "harvest_executions"))
	require.True(t, tableExists(t, b, "harvest_executions"))

	_, err := a.Exec(ctx, `INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state)
		VALUES (gen_random_uuid(), 'wf', 'one', 'RUNNING')`)
	require.NoError(t, err)
	var countA, countB int
	require.NoError(t, a.QueryRow(ctx, `SELECT count(*) FROM harvest_executions`).Scan(&countA))
	require.NoError(t, b.QueryRow(ctx, `SELECT count(*) FROM harvest_executions`).Scan(&countB))
	require.Equal(t, 1, countA)
	require.Equal(t, 0, countB)
}

func TestNewEmptyDBHasNoSchema(t *testing.T) {
	t.Parallel()
	conn, err := pgx.Connect(context.Background(), pgtest.NewEmptyDB(t))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.False(t, tableExists(t, conn, "harvest_executions"))
	require.False(t, tableExists(t, conn, "harvest_schema_migrations"))
}

func TestNewDBDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var name string
	t.Run("inner", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, pgtest.NewDB(t))
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(ctx, `SELECT current_database()`).Scan(&name))
		// Left open on purpose: the drop must force it closed.
		t.Cleanup(func() { _ = conn.Close(ctx) })
	})
	admin, err := pgx.Connect(ctx, pgtest.ServerDSN("postgres"))
	require.NoError(t, err)
	defer admin.Close(ctx)
	var exists bool
	require.NoError(t, admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists))
	require.False(t, exists, "database %s still exists", name)
}
