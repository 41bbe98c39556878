package pgserver

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// noPasswordDSN is a keyword/value DSN for the superuser without a
// password, on host (a socket directory or 127.0.0.1) and port.
func noPasswordDSN(host, port string) string {
	return "host=" + quoteDSN(host) + " port=" + port + " user=postgres dbname=postgres sslmode=disable connect_timeout=10"
}

// runAs runs name as the OS account who, from /, without PG* variables,
// and returns its combined output.
func runAs(t *testing.T, who account, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	cmd.Env = append(cleanEnv(), "HOME=/nonexistent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: who.cred}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// requireRefused asserts that a connection to dsn fails authentication.
func requireRefused(t *testing.T, dsn string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err == nil {
		_ = conn.Close(context.Background())
	}
	require.Error(t, err, "connected without the password")
	require.True(t, isAuthFailure(err), "want an authentication failure, got %v", err)
}

func TestOnlyOwnerConnects(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs psql as the OS user nobody")
	}
	psql, err := exec.LookPath("psql")
	require.NoError(t, err, "psql is needed to connect as another OS user")
	nobody, err := lookupAccount("nobody")
	require.NoError(t, err)
	s := startServer(t, Config{DataDir: filepath.Join(testDir(t, "pgserver-test-"), "data")})
	_, port, err := net.SplitHostPort(s.TCPAddr())
	require.NoError(t, err)

	t.Run("NobodyOverTCP", func(t *testing.T) {
		out, err := runAs(t, nobody, psql, "-X", "-w", "-c", "SELECT 1", noPasswordDSN("127.0.0.1", port))
		require.Error(t, err, "nobody connected over TCP:\n%s", out)
		require.Contains(t, out, "no password supplied")
	})
	t.Run("NobodyOverSocket", func(t *testing.T) {
		out, err := runAs(t, nobody, psql, "-X", "-w", "-c", "SELECT 1", noPasswordDSN(s.SocketDir(), port))
		require.Error(t, err, "nobody connected over the unix socket:\n%s", out)
		require.Contains(t, out, "Permission denied")
	})
	t.Run("NobodyReadsPasswordFile", func(t *testing.T) {
		out, err := runAs(t, nobody, "cat", s.PasswordFile())
		require.Error(t, err, "nobody read the password file")
		require.Contains(t, out, "Permission denied")
	})
	t.Run("NoPasswordOverTCP", func(t *testing.T) {
		requireRefused(t, noPasswordDSN("127.0.0.1", port))
	})
	t.Run("NoPasswordOverSocket", func(t *testing.T) {
		requireRefused(t, noPasswordDSN(s.SocketDir(), port))
	})
	t.Run("OwnerWithPasswordFile", func(t *testing.T) {
		pw, err := os.ReadFile(s.PasswordFile())
		require.NoError(t, err)
		for _, host := range []string{"127.0.0.1", s.SocketDir()} {
			conn := connect(t, noPasswordDSN(host, port)+" password="+quoteDSN(strings.TrimSpace(string(pw))))
			require.NoError(t, conn.Ping(context.Background()), "host %s", host)
		}
	})
	t.Run("PrivateFiles", func(t *testing.T) {
		requirePrivate(t, s.PasswordFile(), 0o600)
		requirePrivate(t, s.SocketDir(), 0o700)
	})
}

// requirePrivate asserts that path has mode perm and, for the password
// file, belongs to this process's user.
func requirePrivate(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, perm, fi.Mode().Perm(), "mode of %s", path)
	if !fi.IsDir() {
		require.Equal(t, uint32(os.Geteuid()), fi.Sys().(*syscall.Stat_t).Uid, "owner of %s", path)
	}
}

// initTrustDataDir initialises dataDir as this package did before it used
// passwords (initdb --auth=trust) and stores a row in table kept.
func initTrustDataDir(t *testing.T, dataDir string) {
	t.Helper()
	binDir, err := findBinDir("")
	require.NoError(t, err)
	acct, err := lookupAccount(RunAsUserDefault)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(dataDir, 0o700))
	require.NoError(t, acct.chown(dataDir))
	run := func(stdin, name string, args ...string) {
		cmd := exec.Command(filepath.Join(binDir, name), args...)
		cmd.Dir, cmd.Env, cmd.Stdin = "/", cleanEnv(), strings.NewReader(stdin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.cred}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
	}
	run("", "initdb", "-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
	run("CREATE TABLE kept AS SELECT 'hello'::text AS v\n", "postgres", "--single", "-D", dataDir, "postgres")
}

func TestStartUpgradesTrustDataDir(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(testDir(t, "pgserver-test-"), "data")
	initTrustDataDir(t, dataDir)

	s := startServer(t, Config{DataDir: dataDir})
	_, port, err := net.SplitHostPort(s.TCPAddr())
	require.NoError(t, err)

	t.Run("NoPasswordOverTCP", func(t *testing.T) {
		requireRefused(t, noPasswordDSN("127.0.0.1", port))
	})
	t.Run("NoPasswordOverSocket", func(t *testing.T) {
		requireRefused(t, noPasswordDSN(s.SocketDir(), port))
	})
	t.Run("HBAHasNoTrust", func(t *testing.T) {
		hba, err := os.ReadFile(filepath.Join(dataDir, hbaFileName))
		require.NoError(t, err)
		require.NotContains(t, string(hba), "trust")
	})
	t.Run("DSNKeepsData", func(t *testing.T) {
		conn := connect(t, s.DSN("postgres"))
		var v string
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT v FROM kept").Scan(&v))
		require.Equal(t, "hello", v)
	})
	t.Run("PrivateFiles", func(t *testing.T) {
		requirePrivate(t, s.PasswordFile(), 0o600)
	})
}

func TestReadPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), perm))
		require.NoError(t, os.Chmod(p, perm))
		return p
	}
	good := write("good", "s3cret\n", 0o600)
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(good, link))
	tests := []struct {
		name, path, want string
		wantErr          error
	}{
		{"Good", good, "s3cret", nil},
		{"Missing", filepath.Join(dir, "missing"), "", os.ErrNotExist},
		{"Empty", write("empty", "\n", 0o600), "", ErrBadPasswordFile},
		{"ReadableByOthers", write("open", "s3cret\n", 0o644), "", ErrBadPasswordFile},
		{"Symlink", link, "", syscall.ELOOP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readPassword(tt.path)
			require.ErrorIs(t, err, tt.wantErr)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLoadOrCreatePassword(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), PasswordFileName)
	first, err := loadOrCreatePassword(path)
	require.NoError(t, err)
	require.Len(t, first, 43, "32 random bytes, base64url")
	again, err := loadOrCreatePassword(path)
	require.NoError(t, err)
	require.Equal(t, first, again, "an existing password is kept")
	requirePrivate(t, path, 0o600)
}
