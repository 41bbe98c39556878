package pgserver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testDir returns a fresh directory the postgres user can reach when tests
// run as root (t.TempDir is 0700 and root-owned).
func testDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(testDir(t, "pgserver-test-"), "data")

	s := startServer(t, Config{DataDir: dataDir})
	require.NotEmpty(t, s.TCPAddr())
	conn := connect(t, s.DSN("postgres"))
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
	_, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	pw, err := os.ReadFile(s.PasswordFile())
	require.NoError(t, err)
	tcp := connect(t, "postgres://postgres:"+strings.TrimSpace(string(pw))+"@"+s.TCPAddr()+"/postgres?sslmode=disable")
	require.NoError(t, tcp.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.NoError(t, tcp.Close(ctx))

	require.NoError(t, s.Stop())
	require.NoError(t, s.Stop(), "Stop is idempotent")

	s2 := startServer(t, Config{DataDir: dataDir, Port: -1})
	require.Empty(t, s2.TCPAddr())
	conn2 := connect(t, s2.DSN("postgres"))
	var v string
	require.NoError(t, conn2.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, "hello", v)
	require.NoError(t, conn2.Close(ctx))
	require.NoError(t, s2.Stop())
}

func TestStartNoBinaries(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Config{
		DataDir: filepath.Join(t.TempDir(), "data"),
		BinDir:  "/nonexistent/postgresql/bin",
	})
	require.ErrorIs(t, err, ErrNoBinaries)
	require.Contains(t, err.Error(), "apt-get install postgresql")
}

func TestStartLongDataDirUsesShortSocketDir(t *testing.T) {
	t.Parallel()
	long := filepath.Join(testDir(t, "pgserver-test-"), strings.Repeat("d", 60), strings.Repeat("e", 40))
	s := startServer(t, Config{DataDir: long, Port: -1})
	require.True(t, strings.HasPrefix(s.SocketDir(), os.TempDir()), "socket dir %s", s.SocketDir())
	require.Less(t, len(s.SocketDir()), maxSocketPath)
	conn := connect(t, s.DSN("postgres"))
	require.NoError(t, conn.Ping(context.Background()))
	require.NoError(t, conn.Close(context.Background()))

	require.NoError(t, s.Stop())
	_, err := os.Stat(s.SocketDir())
	require.True(t, os.IsNotExist(err), "socket dir removed at Stop, stat err %v", err)
}

func TestStartFailureReportsLogTail(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port

	_, err = Start(context.Background(), Config{
		DataDir: filepath.Join(testDir(t, "pgserver-test-"), "data"),
		Port:    port,
	})
	var se *StartError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.LogTail, strconv.Itoa(port))
	require.Contains(t, err.Error(), "exited during start-up")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{DataDir: "/x"}, false},
		{"unix only", Config{DataDir: "/x", Port: -1}, false},
		{"no data dir", Config{}, true},
		{"port too big", Config{DataDir: "/x", Port: 70000}, true},
		{"negative timeout", Config{DataDir: "/x", StopTimeout: -time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			require.Equal(t, tt.wantErr, err != nil, "Validate() = %v", err)
		})
	}
}

func TestQuoteDSN(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres", "postgres"},
		{"", "''"},
		{"a b", "'a b'"},
		{`it's`, `'it\'s'`},
		{`back\slash`, `'back\\slash'`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, quoteDSN(tt.in), "quoteDSN(%q)", tt.in)
	}
}
