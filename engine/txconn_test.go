package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/internal/fence"
)

func TestFencedTx(t *testing.T) {
	b := setup(t)
	ctx := ctxT(t)
	_, err := b.pool.Exec(ctx, `CREATE TABLE fenced_probe (k text PRIMARY KEY)`)
	require.NoError(t, err)
	// An owning engine with no loops, on a pool of one connection: every
	// transaction runs on the same server process, unless one is left
	// unclean and the pool replaces it.
	cfg := b.pool.Config()
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	e, err := New(pool, b.reg, testConfig("node-a"))
	require.NoError(t, err)
	epoch, err := e.fence.Acquire(ctx)
	require.NoError(t, err)
	e.epoch.Store(epoch)
	e.owning.Store(true)
	var backend uint32
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend))
	stored := func(k string) bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM fenced_probe WHERE k = $1`, k).Scan(&n))
		return n == 1
	}
	insert := func(k string) *pgx.Batch {
		batch := &pgx.Batch{}
		batch.Queue(`INSERT INTO fenced_probe (k) VALUES ($1)`, k)
		return batch
	}
	// The connection the fenced work used is back in the pool, outside any
	// transaction (the pool closes a connection released inside one).
	connsClean := func(t *testing.T) {
		t.Helper()
		c, err := pool.Acquire(ctx)
		require.NoError(t, err)
		defer c.Release()
		require.Equal(t, backend, c.Conn().PgConn().PID(), "the same connection, not a replacement")
		require.Equal(t, byte('I'), c.Conn().PgConn().TxStatus())
	}

	t.Run("CommitWithCommitsInItsBatch", func(t *testing.T) {
		err := e.fence.Do(ctx, func(tx *fence.Tx) error { return tx.CommitWith(ctx, insert("with")) })
		require.NoError(t, err)
		require.True(t, stored("with"))
		connsClean(t)
	})

	t.Run("WorkWithoutCommitWithIsCommittedAfter", func(t *testing.T) {
		err := e.fence.Do(ctx, func(tx *fence.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO fenced_probe (k) VALUES ('plain')`)
			return err
		})
		require.NoError(t, err)
		require.True(t, stored("plain"))
		connsClean(t)
	})

	t.Run("NothingRunsAfterTheCommit", func(t *testing.T) {
		err := e.fence.Do(ctx, func(tx *fence.Tx) error {
			if err := tx.CommitWith(ctx, insert("first")); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO fenced_probe (k) VALUES ('late')`)
			return err
		})
		require.ErrorIs(t, err, fence.ErrTxCommitted)
		require.True(t, stored("first"), "the batch with the commit went out")
		require.False(t, stored("late"), "a statement after the commit would run outside the transaction")
		connsClean(t)
	})

	t.Run("AFailedStatementRollsBackTheTransaction", func(t *testing.T) {
		err := e.fence.Do(ctx, func(tx *fence.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO fenced_probe (k) VALUES ('earlier')`); err != nil {
				return err
			}
			batch := insert("dup")
			batch.Queue(`INSERT INTO fenced_probe (k) VALUES ('dup')`)
			return tx.CommitWith(ctx, batch)
		})
		require.Error(t, err)
		require.False(t, stored("earlier"), "the COMMIT behind the failed statement never ran")
		require.False(t, stored("dup"))
		connsClean(t)
	})

	t.Run("AnErrorOfTheWorkRollsBack", func(t *testing.T) {
		boom := errors.New("boom")
		err := e.fence.Do(ctx, func(tx *fence.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO fenced_probe (k) VALUES ('undone')`); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.False(t, stored("undone"))
		connsClean(t)
	})

	t.Run("AFailedFenceBatchRollsBack", func(t *testing.T) {
		ran := false
		err := e.fence.DoBatch(ctx, func(batch *pgx.Batch) {
			batch.Queue(`INSERT INTO fenced_probe (k) VALUES ('fenced')`)
			batch.Queue(`SELECT 1/0`)
		}, func(*fence.Tx) error { ran = true; return nil })
		require.Error(t, err)
		require.False(t, ran, "the work does not run when its first batch failed")
		require.False(t, stored("fenced"))
		connsClean(t)
	})

	t.Run("ACancelWhileTheCommitIsInFlightDoesNotCutIt", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := e.fence.Do(cctx, func(tx *fence.Tx) error {
			batch := &pgx.Batch{}
			batch.Queue(`SELECT pg_sleep(0.3)`)
			batch.Queue(`INSERT INTO fenced_probe (k) VALUES ('in-flight')`)
			// The engine stopping while the batch runs: the COMMIT is
			// on its way, so its outcome must be reported, not an error.
			stop := time.AfterFunc(50*time.Millisecond, cancel)
			defer stop.Stop()
			return tx.CommitWith(cctx, batch)
		})
		require.NoError(t, err)
		require.ErrorIs(t, cctx.Err(), context.Canceled, "the cancel came while the batch ran")
		require.True(t, stored("in-flight"))
		connsClean(t)
	})

	t.Run("ACancelledContextLeavesNoOpenTransaction", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		err := e.fence.Do(cctx, func(tx *fence.Tx) error {
			if _, err := tx.Exec(cctx, `INSERT INTO fenced_probe (k) VALUES ('cancelled')`); err != nil {
				return err
			}
			cancel()
			return tx.CommitWith(cctx, insert("cancelled-2"))
		})
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, stored("cancelled"))
		connsClean(t)
	})
}
