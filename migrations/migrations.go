package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AdvisoryLockKey is the pg_advisory_lock key that serialises Apply across
// processes: the bytes of "HARVEST" read as a big-endian integer. Nothing
// else in Harvest may take a session advisory lock with this key.
const AdvisoryLockKey int64 = 0x48_41_52_56_45_53_54

// TableName is the table that records applied migrations.
const TableName = "harvest_schema_migrations"

var (
	// ErrBadFileName reports an embedded SQL file whose name is not
	// NNN_name.up.sql or NNN_name.down.sql, or a duplicate version.
	ErrBadFileName = errors.New("bad migration file name")

	// ErrUnknownVersion reports that the database records a migration this
	// binary does not embed: the schema is newer than the code, so Apply
	// refuses to touch it.
	ErrUnknownVersion = errors.New("database has a migration version unknown to this binary")
)

//go:embed *.sql
var files embed.FS

// Migration is one embedded up migration.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Querier runs a query; *pgx.Conn, *pgxpool.Pool and pgx.Tx satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

var fileNameRE = regexp.MustCompile(`^(\d{3,})_([a-z0-9_]+)\.(up|down)\.sql$`)

// all holds the embedded up migrations in version order. A malformed file
// name is a build defect, so loading panics.
var all = mustLoad(files)

func mustLoad(fsys fs.FS) []Migration {
	ms, err := load(fsys)
	if err != nil {
		panic(err)
	}
	return ms
}

func load(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		m := fileNameRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: %w", e.Name(), ErrBadFileName)
		}
		if m[3] != "up" {
			continue
		}
		v, err := strconv.Atoi(m[1])
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %q: %w", e.Name(), ErrBadFileName)
		}
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %03d: %w", v, err)
		}
		ms = append(ms, Migration{Version: v, Name: m[2], SQL: string(body)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migration version %03d twice: %w", ms[i].Version, ErrBadFileName)
		}
	}
	return ms, nil
}

// Versions returns the embedded migration versions in ascending order.
func Versions() []int {
	vs := make([]int, len(all))
	for i, m := range all {
		vs[i] = m.Version
	}
	return vs
}

// Migrations returns the embedded up migrations in ascending version order.
func Migrations() []Migration {
	return slices.Clone(all)
}

// Applied returns the versions recorded in harvest_schema_migrations in
// ascending order; it returns an empty slice when the table does not exist.
func Applied(ctx context.Context, q Querier) ([]int, error) {
	rows, err := q.Query(ctx, `SELECT to_regclass($1) IS NOT NULL`, TableName)
	if err != nil {
		return nil, fmt.Errorf("check migrations table: %w", err)
	}
	exists, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil {
		return nil, fmt.Errorf("check migrations table: %w", err)
	}
	if !exists {
		return []int{}, nil
	}
	rows, err = q.Query(ctx, `SELECT version FROM `+TableName+` ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("list applied migrations: %w", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("list applied migrations: %w", err)
	}
	return vs, nil
}

// ApplyPool runs Apply on one connection acquired from pool. If Apply fails
// the connection is closed rather than returned, so an advisory lock can
// never leak back into the pool.
func ApplyPool(ctx context.Context, pool *pgxpool.Pool) error {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire migration connection: %w", err)
	}
	if err := Apply(ctx, c.Conn()); err != nil {
		conn := c.Hijack()
		_ = conn.Close(context.WithoutCancel(ctx))
		return err
	}
	c.Release()
	return nil
}

// Apply applies every pending embedded up migration on conn, in version
// order, each in its own transaction, while holding the advisory lock
// AdvisoryLockKey on conn. A second call is a no-op. It returns
// ErrUnknownVersion, applying nothing, when the database records a version
// this binary does not embed.
func Apply(ctx context.Context, conn *pgx.Conn) (err error) {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, AdvisoryLockKey); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		_, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, AdvisoryLockKey)
		if uerr != nil && err == nil {
			err = fmt.Errorf("release migration lock: %w", uerr)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+TableName+` (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	applied, err := Applied(ctx, conn)
	if err != nil {
		return err
	}
	known := Versions()
	for _, v := range applied {
		if !slices.Contains(known, v) {
			return fmt.Errorf("version %03d: %w", v, ErrUnknownVersion)
		}
	}
	for _, m := range all {
		if slices.Contains(applied, m.Version) {
			continue
		}
		if err := applyOne(ctx, conn, m); err != nil {
			return fmt.Errorf("apply migration %03d: %w", m.Version, err)
		}
	}
	return nil
}

func applyOne(ctx context.Context, conn *pgx.Conn, m Migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// No arguments: pgx uses the simple protocol, which runs a
		// multi-statement file in one round trip.
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+TableName+` (version, name) VALUES ($1, $2)`, m.Version, m.Name)
		return err
	})
}
