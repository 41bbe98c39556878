package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/internal/pgpool"
	"github.com/harvestd/harvest/internal/pgserver"
	"github.com/harvestd/harvest/migrations"
)

// EnvDSN names the environment variable that points the harness at an
// existing server instead of starting one.
const EnvDSN = "HARVEST_TEST_DSN"

const (
	setupTimeout = 2 * time.Minute
	adminTimeout = time.Minute
)

// harness is the per-binary state Main builds.
type harness struct {
	tmpDir   string
	server   *pgserver.Server
	adminDSN string
	dsn      func(dbname string) string
	template string
	// createOpts ends CREATE DATABASE statements for clones: STRATEGY
	// FILE_COPY on the private fsync-off server, about 3x faster there
	// than PostgreSQL 15's default WAL_LOG.
	createOpts string

	mu    sync.Mutex // guards admin and serialises CREATE/DROP DATABASE
	admin *pgx.Conn
}

var h *harness

// Main runs the package's tests against a private server and exits with
// their status; call it from TestMain. It exits 1 with a message on stderr
// when the server or the template database cannot be set up.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	h, err = setup()
	if err != nil {
		if os.Getenv(EnvDSN) != "" {
			// Not the DSN itself: it may hold a password.
			err = fmt.Errorf("using %s: %w", EnvDSN, err)
		}
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := h.teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: teardown: %v\n", err)
		code = failed(code)
	}
	return code
}

func failed(code int) int {
	if code == 0 {
		return 1
	}
	return code
}

func setup() (*harness, error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	hs := &harness{template: "harvest_template_" + randomHex()}
	if err := hs.connectServer(ctx); err != nil {
		_ = hs.teardown()
		return nil, err
	}
	if err := hs.buildTemplate(ctx); err != nil {
		_ = hs.teardown()
		return nil, err
	}
	return hs, nil
}

// connectServer uses $HARVEST_TEST_DSN or starts a private server.
func (hs *harness) connectServer(ctx context.Context) error {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		if _, err := pgx.ParseConfig(dsn); err != nil {
			return fmt.Errorf("parse %s: %w", EnvDSN, err)
		}
		hs.adminDSN = dsn
		hs.dsn = func(db string) string { return withDBName(dsn, db) }
		return nil
	}
	dir, err := os.MkdirTemp("", "harvest-pgtest-")
	if err != nil {
		return fmt.Errorf("create temp dir: %w", err)
	}
	hs.tmpDir = dir
	// The server may run as another user (when tests run as root): let it in.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("chmod temp dir: %w", err)
	}
	srv, err := pgserver.Start(ctx, pgserver.Config{DataDir: filepath.Join(dir, "data"), Port: -1})
	if err != nil {
		return fmt.Errorf("start test postgres (or set %s): %w", EnvDSN, err)
	}
	hs.server, hs.adminDSN, hs.dsn = srv, srv.DSN("postgres"), srv.DSN
	return hs.chooseCreateOpts(ctx)
}

func (hs *harness) chooseCreateOpts(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, hs.adminDSN)
	if err != nil {
		return fmt.Errorf("connect to test postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version int
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return fmt.Errorf("read server version: %w", err)
	}
	if version >= 150000 {
		hs.createOpts = " STRATEGY FILE_COPY"
	}
	return nil
}

// buildTemplate creates the template database and migrates it.
func (hs *harness) buildTemplate(ctx context.Context) error {
	if err := hs.createDB(ctx, hs.template, ""); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, hs.dsn(hs.template))
	if err != nil {
		return fmt.Errorf("connect to template: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := migrations.Apply(ctx, conn); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	return nil
}

func (hs *harness) teardown() error {
	var errs []error
	if hs.template != "" && hs.dsn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		errs = append(errs, hs.dropDB(ctx, hs.template))
		cancel()
	}
	if hs.admin != nil {
		errs = append(errs, hs.admin.Close(context.Background()))
	}
	if hs.server != nil {
		errs = append(errs, hs.server.Stop())
	}
	if hs.tmpDir != "" {
		errs = append(errs, os.RemoveAll(hs.tmpDir))
	}
	return errors.Join(errs...)
}

// adminExec runs one statement on the shared admin connection, reconnecting
// if a previous failure closed it.
func (hs *harness) adminExec(ctx context.Context, sql string) error {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.admin == nil || hs.admin.IsClosed() {
		conn, err := pgx.Connect(ctx, hs.adminDSN)
		if err != nil {
			return fmt.Errorf("connect admin: %w", err)
		}
		hs.admin = conn
	}
	_, err := hs.admin.Exec(ctx, sql)
	return err
}

// createDB creates name, cloned from template when it is not empty and
// from the empty template0 otherwise.
func (hs *harness) createDB(ctx context.Context, name, template string) error {
	sql := "CREATE DATABASE " + ident(name) + " TEMPLATE template0"
	if template != "" {
		sql = "CREATE DATABASE " + ident(name) + " TEMPLATE " + ident(template) + hs.createOpts
	}
	if err := hs.adminExec(ctx, sql); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func (hs *harness) dropDB(ctx context.Context, name string) error {
	if err := hs.adminExec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func current(t testing.TB) *harness {
	t.Helper()
	if h != nil {
		return h
	}
	if hs := lazyHarness(); hs != nil {
		return hs
	}
	t.Fatal("pgtest: the package's TestMain must call pgtest.Main(m), or the test pgtest.Lazy(t)")
	return nil
}

// newDB creates a database and registers its removal with t.
func newDB(t testing.TB, template string) string {
	t.Helper()
	hs := current(t)
	name := "t_" + randomHex()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := hs.createDB(ctx, name, template); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if err := hs.dropDB(ctx, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return hs.dsn(name)
}

// NewDB creates a fresh database with the full migrated schema, named
// t_<random>, drops it when t ends, and returns its DSN.
func NewDB(t testing.TB) string {
	t.Helper()
	return newDB(t, current(t).template)
}

// NewEmptyDB creates a fresh database without any migrations applied,
// cloned from template0, drops it when t ends, and returns its DSN.
func NewEmptyDB(t testing.TB) string {
	t.Helper()
	return newDB(t, "")
}

// NewPool creates a database like NewDB and returns a pool on it; the pool
// is closed, then the database dropped, when t ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := NewDB(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse dsn: %v", err)
	}
	pgpool.Configure(cfg) // as the node's pools
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// ServerDSN returns a DSN for database dbname on the test server, for tests
// that create and drop databases themselves (several shard databases, say).
// It panics when called outside a binary whose TestMain calls Main.
func ServerDSN(dbname string) string {
	if h == nil {
		panic("pgtest: the package's TestMain must call pgtest.Main(m)")
	}
	return h.dsn(dbname)
}

// withDBName returns dsn pointed at database db; dsn is a postgres:// URL
// or a keyword/value string, where a later dbname overrides an earlier one.
func withDBName(dsn, db string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Path, u.RawPath = "/"+db, ""
			return u.String()
		}
	}
	return dsn + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(db) + "'"
}

func ident(name string) string {
	return pgx.Identifier{name}.Sanitize()
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
