package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a throwaway PostgreSQL server listening on the bridge
// address, run as an unprivileged OS user (initdb and postgres refuse
// root). Nodes reach it over TCP through the bridge, so network faults
// apply to it too; the unix socket (which crosses namespaces) is not used.
//
// fsync is off (a crash of the postgres processes loses nothing the kernel
// holds), but synchronous_commit stays on: with it off, the immediate
// shutdown of a PostgreSQL restart fault loses acknowledged commits, and
// the checker rightly reports them as lost acknowledged starts and signals.
type Postgres struct {
	Dir  string // owned by User; data/ and pg.log inside
	Host string // the bridge address
	Port int
	User string // OS user, default "postgres"
	Logf func(format string, args ...any)

	bin string
}

// pgBinDir finds initdb/pg_ctl: PATH, else the newest /usr/lib/postgresql/*/bin.
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("initdb/pg_ctl not found on PATH or under /usr/lib/postgresql/*/bin")
}

func (p *Postgres) asUser(args ...string) error {
	if os.Geteuid() == 0 {
		return run("runuser", append([]string{"-u", p.User, "--"}, args...)...)
	}
	return run(args[0], args[1:]...)
}

// Start runs initdb and starts the server.
func (p *Postgres) Start() error {
	if p.User == "" {
		p.User = "postgres"
	}
	bin, err := pgBinDir()
	if err != nil {
		return err
	}
	p.bin = bin
	if err := os.MkdirAll(filepath.Join(p.Dir, "sock"), 0o755); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if err := run("chown", "-R", p.User, p.Dir); err != nil {
			return err
		}
	}
	data := filepath.Join(p.Dir, "data")
	if err := p.asUser(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"); err != nil {
		return err
	}
	conf := fmt.Sprintf(`
listen_addresses = '%s'
port = %d
unix_socket_directories = '%s'
fsync = off
full_page_writes = off
max_connections = 400
`, p.Host, p.Port, filepath.Join(p.Dir, "sock"))
	if err := appendFile(filepath.Join(data, "postgresql.conf"), conf); err != nil {
		return err
	}
	prefix := p.Host[:strings.LastIndex(p.Host, ".")]
	if err := appendFile(filepath.Join(data, "pg_hba.conf"), fmt.Sprintf("host all all %s.0/24 trust\n", prefix)); err != nil {
		return err
	}
	return p.startServer()
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (p *Postgres) startServer() error {
	return p.asUser(filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.Dir, "data"),
		"-l", filepath.Join(p.Dir, "pg.log"), "-w", "-t", "30", "start")
}

// Stop stops the server; immediate is a crash (no checkpoint, recovery at
// the next start).
func (p *Postgres) Stop(immediate bool) error {
	mode := "fast"
	if immediate {
		mode = "immediate"
	}
	return p.asUser(filepath.Join(p.bin, "pg_ctl"), "-D", filepath.Join(p.Dir, "data"), "-m", mode, "-w", "-t", "30", "stop")
}

// Restart crashes the server (immediate stop), waits down, and starts it.
func (p *Postgres) Restart(down time.Duration) error {
	if err := p.Stop(true); err != nil {
		return err
	}
	time.Sleep(down)
	return p.startServer()
}

// DSN is the URL of database db as the nodes and the checker use it.
//
// Its connect timeout is 10 s. With 2 s, a PostgreSQL restart twice left
// the shard owners unable to connect for four minutes (CI and a local
// run, 2026-12-07): right after the restart every pool opened up to 32
// connections at once on two cores, none finished its startup within
// 2 s, each abandoned one was tried again, and PostgreSQL forked
// backends for attempts nobody waited for (about 40 a second) while the
// node that owned no shard connected at once. A timeout that outlasts a
// loaded startup ends that loop.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@%s:%d/%s?sslmode=disable&connect_timeout=10", p.Host, p.Port, db)
}

// CreateDB creates an empty database (harvestd migrates it on first use).
func (p *Postgres) CreateDB(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	return err
}
