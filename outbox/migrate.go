package outbox

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.up.sql
var migrations embed.FS

// Beginner starts a transaction: a *pgxpool.Pool or a *pgx.Conn.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// migrationLock is the advisory lock Migrate holds, so that two
// processes booting at once apply each migration once.
const migrationLock = 0x6876_6f62 // "hvob"

// Migrate applies the package's migrations that db has not applied yet,
// each in a transaction of its own with its record.
func Migrate(ctx context.Context, db Beginner) error {
	names, err := fs.Glob(migrations, "migrations/*.up.sql")
	if err != nil {
		return fmt.Errorf("outbox: list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := apply(ctx, db, name); err != nil {
			return err
		}
	}
	return nil
}

// apply applies migration name unless its version is recorded.
func apply(ctx context.Context, db Beginner, name string) error {
	version, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, "migrations/"), "_", 2)[0])
	if err != nil {
		return fmt.Errorf("outbox: migration %s: no version: %w", name, err)
	}
	sql, err := migrations.ReadFile(name)
	if err != nil {
		return fmt.Errorf("outbox: read migration %s: %w", name, err)
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("outbox: lock migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS harvest_app_outbox_migrations (
			version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("outbox: create the migrations table: %w", err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO harvest_app_outbox_migrations (version) VALUES ($1) ON CONFLICT DO NOTHING`, version)
		if err != nil || tag.RowsAffected() == 0 {
			return err // applied already
		}
		if _, err := tx.Exec(ctx, string(sql)); err != nil {
			return fmt.Errorf("outbox: migration %s: %w", name, err)
		}
		return nil
	})
}
