package pgserver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStartUnderPrivateDir runs the server as the postgres user on a data
// directory under a root-owned 0700 directory, like a repository cloned
// into /root.
func TestStartUnderPrivateDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only then does postgres run as another user")
	}
	home := t.TempDir()
	require.NoError(t, os.Chmod(home, 0o700)) // as root's home
	dataDir := filepath.Join(home, "repo", ".harvest", "postgres")
	ctx := context.Background()

	s := startServer(t, Config{DataDir: dataDir})
	require.Equal(t, filepath.Join(dataDir, "sock"), s.SocketDir())
	conn := connect(t, s.DSN("postgres"))
	_, err := conn.Exec(ctx, "CREATE TABLE kept AS SELECT 'hello'::text AS v")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	require.NoError(t, s.Stop())

	s2 := startServer(t, Config{DataDir: dataDir})
	conn2 := connect(t, s2.DSN("postgres"))
	var v string
	require.NoError(t, conn2.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, "hello", v)
	_, port, err := net.SplitHostPort(s2.TCPAddr())
	require.NoError(t, err)
	requireRefused(t, noPasswordDSN("127.0.0.1", port))
	requirePrivate(t, s2.PasswordFile(), 0o600)
	fi, err := os.Stat(home)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the private directory is left as it was")
}
