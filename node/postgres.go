package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/internal/pgpool"
	"github.com/harvestd/harvest/internal/pgserver"
	"github.com/harvestd/harvest/migrations"
)

// startManagedPostgres starts (initialising on first use) the durable
// server under DataDir/postgres and ensures the database DatabaseName. It
// returns the server and the DSN of that database.
func (n *Node) startManagedPostgres(ctx context.Context) (*pgserver.Server, string, error) {
	srv, err := pgserver.Start(ctx, pgserver.Config{
		DataDir: filepath.Join(n.cfg.DataDir, PostgresDir),
		BinDir:  n.cfg.PGBinDir,
		Fsync:   true,
		Logger:  n.logger("postgres"),
	})
	if errors.Is(err, pgserver.ErrNoBinaries) {
		return nil, "", fmt.Errorf("start managed postgres: initdb and postgres not found %s: %w", binWhere(n.cfg.PGBinDir), ErrNoPostgresBinaries)
	}
	if err != nil {
		return nil, "", fmt.Errorf("start managed postgres: %w", err)
	}
	if err := createDatabase(ctx, srv.DSN("postgres"), DatabaseName); err != nil {
		return srv, "", err
	}
	return srv, srv.DSN(DatabaseName), nil
}

// binWhere says where the binaries were looked for.
func binWhere(binDir string) string {
	if binDir == "" {
		return "on PATH or in /usr/lib/postgresql/*/bin"
	}
	return "in " + binDir
}

// createDatabase creates name unless it exists; a concurrent creation by
// another process counts as success.
func createDatabase(ctx context.Context, adminDSN, name string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("connect to managed postgres: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") { // duplicate_database
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// poolMaxConnsDefault sizes the pool unless the DSN sets pool_max_conns:
// workflow workers hold a connection for a whole task, so pgxpool's
// default (the number of CPUs, at least 4) would starve the lease renewal
// and the API on a small machine.
const poolMaxConnsDefault = 32

// openPool connects to dsn and migrates the schema.
func openPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse postgres dsn: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, poolMaxConnsDefault)
	}
	pgpool.Configure(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	if err := migrations.ApplyPool(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate database: %w", err)
	}
	return pool, nil
}
