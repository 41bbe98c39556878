package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestAnalyzeYoungTables(t *testing.T) {
	t.Parallel()

	t.Run("GrownTableIsAnalysedByTheOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Autovacuum (every 5 s on the test server) could analyse the table
		// first and leave the owner nothing to do.
		_, err := b.pool.Exec(context.Background(), `ALTER TABLE harvest_executions SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
		e := b.engine(t)
		for i := range 300 {
			start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: fmt.Sprintf("k%d", i)})
		}
		waitAnalysed(t, b, e)
		// The owner's own loop may have analysed first, at any point past
		// analyzeMinChanges modifications (inserts and workflow-task
		// updates both count), so only "has statistics" is certain: a
		// never-analysed table has reltuples -1.
		var tuples float64
		require.NoError(t, b.pool.QueryRow(context.Background(),
			`SELECT reltuples FROM pg_class WHERE oid = 'harvest_executions'::regclass`).Scan(&tuples))
		require.Greater(t, tuples, 0.0)
	})

	t.Run("PayloadColumnsAreSkipped", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		_, err := b.pool.Exec(ctx, `ALTER TABLE harvest_executions SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
		e := b.engine(t)
		for i := range 250 {
			start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: fmt.Sprintf("k%d", i),
				Input: raw(t, map[string]int{"n": i})})
		}
		waitAnalysed(t, b, e)
		rows, err := b.pool.Query(ctx, `
			SELECT attname::text FROM pg_stats WHERE tablename = 'harvest_executions'`)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Subset(t, got, []string{"execution_id", "workflow_name", "workflow_id", "state", "created_at"})
		for _, payload := range []string{"input", "output", "error", "memo"} {
			require.NotContains(t, got, payload)
		}

	})

	t.Run("AnalysisResetsTheModificationCount", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		// Were autovacuum to analyse the table first, it would reset the
		// count and set last_autoanalyze, leaving the owner nothing to do
		// and last_analyze empty.
		_, err := b.pool.Exec(ctx, `ALTER TABLE harvest_executions SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
		e := b.engine(t)
		conn, err := b.pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		_, err = conn.Exec(ctx, `
			INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state)
			SELECT gen_random_uuid(), 'direct', 'w' || i, 'RUNNING' FROM generate_series(1, 300) AS i`)
		require.NoError(t, err)
		// This backend's counts reach the statistics views when it goes idle.
		_, err = conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
		require.NoError(t, err)
		waitAnalysed(t, b, e)
		// Only an analysis of every column resets the count; were it left
		// at 300, the table would be analysed again on every tick.
		var mods int64
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 'harvest_executions'`).Scan(&mods))
		require.Zero(t, mods)
	})

	t.Run("UnchangedTableIsLeftAlone", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		require.NoError(t, e.analyzer.YoungTables(context.Background()))
		var analysed bool
		require.NoError(t, b.pool.QueryRow(context.Background(), `
			SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'harvest_executions'`).Scan(&analysed))
		require.False(t, analysed)
	})
}

// waitAnalysed runs the owner's analysis until harvest_executions has been
// analysed: the modification counts it goes by reach the statistics
// views only when the writing backends flush them.
func waitAnalysed(t *testing.T, b *testBundle, e *Engine) {
	t.Helper()
	// last_analyze is set by ANALYZE commands only (autovacuum sets
	// last_autoanalyze).
	deadline := time.Now().Add(30 * time.Second)
	for {
		var analysed bool
		require.NoError(t, b.pool.QueryRow(context.Background(), `
			SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'harvest_executions'`).Scan(&analysed))
		if analysed {
			return
		}
		require.True(t, time.Now().Before(deadline), "harvest_executions was not analysed")
		require.NoError(t, e.analyzer.YoungTables(context.Background()))
		time.Sleep(100 * time.Millisecond)
	}
}
