package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgserver"
)

// reachableDir is a fresh directory that the managed server, which runs as
// user postgres when the tests run as root, can reach (t.TempDir is 0700).
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "node-pg-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// initTrustCluster runs initdb on dataDir as Harvest did before the managed
// server had a password: trust authentication for every local client.
func initTrustCluster(t *testing.T, dataDir string) {
	t.Helper()
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		require.NotEmpty(t, matches, "initdb not found")
		initdb = matches[len(matches)-1]
	}
	require.NoError(t, os.Mkdir(dataDir, 0o700))
	cmd := exec.Command(initdb, "-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
	cmd.Dir = "/"
	if os.Geteuid() == 0 {
		u, err := user.Lookup(pgserver.RunAsUserDefault)
		require.NoError(t, err)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dataDir, uid, gid))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "initdb:\n%s", out)
}

func TestManagedPostgresUpgradesTrustDataDir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := Config{
		DataDir:  reachableDir(t),
		HTTPAddr: "127.0.0.1:0",
		Logger:   zerolog.New(zerolog.NewTestWriter(t)),
	}
	initTrustCluster(t, filepath.Join(cfg.DataDir, PostgresDir))
	n := b.start(t, cfg)
	require.NotNil(t, n.pg, "the node runs the managed server")

	t.Run("NodeDSNWorks", func(t *testing.T) {
		status, _ := get(t, n, "/readyz")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, n.NodeID(), leaseOwner(t, n.pg.DSN(DatabaseName)))
	})
	t.Run("NoPasswordRefused", func(t *testing.T) {
		_, port, err := net.SplitHostPort(n.pg.TCPAddr())
		require.NoError(t, err)
		for _, host := range []string{"127.0.0.1", n.pg.SocketDir()} {
			conn, err := pgx.Connect(ctxT(t), "host='"+host+"' port="+port+" user=postgres dbname="+DatabaseName+" sslmode=disable")
			if err == nil {
				_ = conn.Close(context.Background())
			}
			var pgErr *pgconn.PgError
			require.True(t, errors.As(err, &pgErr), "host %s: want a server error, got %v", host, err)
			require.Equal(t, "28P01", pgErr.Code, "host %s: want invalid_password", host)
		}
	})
	t.Run("PasswordFileIsPrivate", func(t *testing.T) {
		fi, err := os.Stat(filepath.Join(cfg.DataDir, PostgresDir, pgserver.PasswordFileName))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	})
}

func TestNoPostgresBinaries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	empty := t.TempDir()
	cfg := Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", PGBinDir: empty, Logger: zerolog.Nop()}
	n, err := New(cfg, b.reg)
	require.NoError(t, err)
	err = n.Start(ctxT(t))
	require.ErrorIs(t, err, ErrNoPostgresBinaries)
	for _, s := range []string{"in " + empty, "node.Config.PGBinDir", "--pg-bin-dir"} {
		require.Contains(t, err.Error(), s)
	}
	require.NotContains(t, err.Error(), "pgserver", "no internal package in the hint")
}
