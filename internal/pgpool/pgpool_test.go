package pgpool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgpool"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestConfigure(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewEmptyDB(t)
	open := func(t *testing.T, dsn string) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(dsn)
		require.NoError(t, err)
		pgpool.Configure(cfg)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return pool
	}

	t.Run("GenericPlansAndUUIDs", func(t *testing.T) {
		pool := open(t, dsn)
		var mode string
		require.NoError(t, pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode))
		require.Equal(t, pgpool.PlanCacheMode, mode)
		id := uuid.New()
		var got uuid.UUID
		require.NoError(t, pool.QueryRow(ctx, `SELECT $1::uuid`, id).Scan(&got))
		require.Equal(t, id, got)
	})
	t.Run("DSNWins", func(t *testing.T) {
		pool := open(t, withParam(dsn, "plan_cache_mode", "auto"))
		var mode string
		require.NoError(t, pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode))
		require.Equal(t, "auto", mode)
	})
}

// withParam adds key=value to a URL or keyword/value DSN.
func withParam(dsn, key, value string) string {
	if !strings.Contains(dsn, "://") {
		return dsn + " " + key + "=" + value
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + key + "=" + value
}
