package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"
)

const (
	// LogFileName is the server's log file inside DataDir.
	LogFileName = "harvest-postgres.log"

	// superuser is the role initdb creates; DSN connects as it.
	superuser = "postgres"

	pollInterval = 20 * time.Millisecond
	pingTimeout  = time.Second
	logTailBytes = 4096
	startTries   = 3
)

// StartError reports that initdb failed or that the server did not come up.
// LogTail holds the end of the tool's output or of the server log.
type StartError struct {
	Err     error
	LogTail string
}

func (e *StartError) Error() string {
	return fmt.Sprintf("start postgres: %v\n--- log tail ---\n%s", e.Err, e.LogTail)
}

func (e *StartError) Unwrap() error { return e.Err }

// Server is a running private PostgreSQL server. Its methods are safe for
// concurrent use.
type Server struct {
	cfg          Config
	log          zerolog.Logger
	binDir       string
	dataDir      string
	socketDir    string
	ownSocketDir bool
	acct         account
	port         int
	tcp          bool
	password     string   // the superuser's, from the password file
	pgDataDir    string   // dataDir as postgres names it (see reachDataDir)
	dirFile      *os.File // dataDir open for postgres, during Start only

	cmd     *exec.Cmd
	done    chan struct{} // closed once the postgres process has exited
	waitErr error         // the process's exit error; read after done closes

	stopOnce sync.Once
	stopErr  error
}

// Start initialises cfg.DataDir if it holds no cluster yet, makes sure only
// the holder of its password file can connect (see the package doc), starts
// postgres on it and returns once the server accepts connections. It returns an error
// wrapping ErrNoBinaries when initdb or postgres cannot be found, and a
// *StartError carrying the log tail when initdb fails or the server exits or
// times out during start-up. The server keeps running after ctx ends; call
// Stop.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	defer s.closeDataDir()
	if err := s.createDataDir(); err != nil {
		return nil, err
	}
	if err := s.reachDataDir(); err != nil {
		return nil, err
	}
	if err := s.initDataDir(ctx); err != nil {
		return nil, err
	}
	if err := s.secureDataDir(ctx); err != nil {
		return nil, err
	}
	if err := s.prepareSocketDir(); err != nil {
		return nil, err
	}
	if err := s.launchWithRetry(ctx); err != nil {
		s.removeOwnSocketDir()
		return nil, err
	}
	return s, nil
}

func newServer(cfg Config) (*Server, error) {
	binDir, err := findBinDir(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	acct, err := lookupAccount(cfg.RunAsUser)
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	return &Server{cfg: cfg, log: cfg.Logger, binDir: binDir, dataDir: dataDir, acct: acct}, nil
}

// createDataDir creates dataDir, owned by the account, unless it already
// holds a cluster.
func (s *Server) createDataDir() error {
	if s.hasCluster() {
		return nil
	}
	// Parents we create stay searchable so a run-as user can reach the
	// data dir; the data dir itself is private, as postgres requires.
	if err := os.MkdirAll(filepath.Dir(s.dataDir), 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Mkdir(s.dataDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create data dir: %w", err)
	}
	return s.acct.chown(s.dataDir)
}

func (s *Server) hasCluster() bool {
	_, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION"))
	return err == nil
}

// initDataDir runs initdb unless dataDir already holds a cluster.
func (s *Server) initDataDir(ctx context.Context) error {
	if s.hasCluster() {
		return nil
	}
	// Nobody can connect until secureDataDir sets the password and
	// replaces pg_hba.conf.
	args := []string{"-D", s.pgDataDir, "-U", superuser, "--auth=reject", "-E", "UTF8", "--no-locale"}
	if !s.cfg.Fsync {
		args = append(args, "--no-sync")
	}
	s.log.Info().Str("data_dir", s.dataDir).Msg("initialising postgres data directory")
	cmd := s.command(ctx, syscall.SIGKILL, "initdb", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return &StartError{Err: fmt.Errorf("initdb: %w", err), LogTail: tail(out)}
	}
	return nil
}

// prepareSocketDir picks and creates the unix socket directory.
func (s *Server) prepareSocketDir() error {
	dir := s.cfg.SocketDir
	if dir == "" {
		dir = filepath.Join(s.dataDir, "sock")
		if socketPathTooLong(dir) {
			tmp, err := os.MkdirTemp("", "hpg-")
			if err != nil {
				return fmt.Errorf("create socket dir: %w", err)
			}
			dir, s.ownSocketDir = tmp, true
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolve socket dir: %w", err)
	}
	if socketPathTooLong(dir) {
		return fmt.Errorf("socket dir %s: path too long for a unix socket (max %d bytes)", dir, maxSocketPath-len("/.s.PGSQL.65535"))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create socket dir: %w", err)
	}
	if s.cfg.SocketDir == "" {
		// Ours: keep other users out even if its mode was changed.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make socket dir private: %w", err)
		}
	}
	s.socketDir = dir
	if err := s.acct.chown(dir); err != nil {
		return err
	}
	if s.pgPath(dir) != dir {
		return nil // inside the data dir, which postgres reaches by descriptor
	}
	return s.acct.checkReachable(dir)
}

func socketPathTooLong(dir string) bool {
	return len(dir)+len("/.s.PGSQL.65535") >= maxSocketPath
}

// launchWithRetry launches postgres, retrying with a new port when a port it
// picked itself was taken between picking and binding.
func (s *Server) launchWithRetry(ctx context.Context) error {
	for try := 1; ; try++ {
		if err := s.choosePort(); err != nil {
			return err
		}
		err := s.launch(ctx)
		var se *StartError
		if err == nil || s.cfg.Port != 0 || try == startTries ||
			!errors.As(err, &se) || !strings.Contains(se.LogTail, "could not bind") {
			return err
		}
		s.log.Warn().Int("port", s.port).Msg("postgres port taken, retrying")
	}
}

func (s *Server) choosePort() error {
	switch {
	case s.cfg.Port > 0:
		s.port, s.tcp = s.cfg.Port, true
	case s.cfg.Port < 0:
		s.port, s.tcp = unixOnlyPort, false
	default:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("pick free port: %w", err)
		}
		s.port, s.tcp = l.Addr().(*net.TCPAddr).Port, true
		_ = l.Close()
	}
	return nil
}

// launch starts the postgres process and waits until it accepts connections.
func (s *Server) launch(ctx context.Context) error {
	logPath := s.LogPath()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("open postgres log: %w", err)
	}
	defer logFile.Close() // the child keeps its own copy
	logStart, _ := logFile.Seek(0, io.SeekEnd)
	// The server outlives ctx. SIGINT is a fast shutdown: if this process
	// dies, so does the server.
	cmd := s.command(context.WithoutCancel(ctx), syscall.SIGINT, "postgres", s.serverArgs()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run postgres: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		return &StartError{Err: err, LogTail: readTail(logPath, logStart)}
	}
	s.log.Info().Str("data_dir", s.dataDir).Str("socket_dir", s.socketDir).
		Int("port", s.port).Bool("tcp", s.tcp).Int("pid", cmd.Process.Pid).Msg("postgres started")
	return nil
}

func (s *Server) serverArgs() []string {
	listen := ""
	if s.tcp {
		listen = "127.0.0.1"
	}
	args := []string{
		"-D", s.pgDataDir,
		"-k", s.pgPath(s.socketDir),
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=" + listen,
		"-c", "max_connections=" + strconv.Itoa(s.cfg.MaxConnections),
		// A fresh shard's tables grow from nothing: analysing them soon
		// replaces the sequential-scan plans cached while they were tiny.
		"-c", "autovacuum_naptime=" + autovacuumNaptime,
	}
	if !s.cfg.Fsync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	return args
}

// waitReady polls until a connection succeeds, the process exits, or ctx
// ends.
func (s *Server) waitReady(ctx context.Context) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := s.ping(ctx)
		if err == nil {
			return nil
		}
		if isAuthFailure(err) {
			return fmt.Errorf("postgres refused the password in %s: %w", s.PasswordFile(), err)
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited during start-up: %w", s.exitErr())
		case <-ctx.Done():
			return fmt.Errorf("wait for postgres to accept connections: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (s *Server) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// isAuthFailure reports an error of SQLSTATE class 28 (invalid
// authorization): polling longer would not help.
func isAuthFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "28")
}

// exitErr is the process's exit error; call only after done is closed.
func (s *Server) exitErr() error {
	if s.waitErr == nil {
		return errors.New("exit status 0")
	}
	return s.waitErr
}

// kill SIGKILLs the server's whole process group and waits for the
// postmaster to be reaped.
func (s *Server) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// Stop shuts the server down fast (SIGINT: open transactions roll back),
// waits up to Config.StopTimeout, then kills its process group. It is
// idempotent; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopErr = s.stop()
		s.removeOwnSocketDir()
	})
	return s.stopErr
}

func (s *Server) stop() error {
	select {
	case <-s.done:
		return fmt.Errorf("postgres had already exited: %w", s.exitErr())
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("signal postgres: %w", err)
	}
	timer := time.NewTimer(s.cfg.StopTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
	case <-timer.C:
		s.kill()
		return fmt.Errorf("stop postgres: no shutdown within %v, killed", s.cfg.StopTimeout)
	}
	if s.waitErr != nil {
		return fmt.Errorf("stop postgres: %w", s.waitErr)
	}
	s.log.Info().Str("data_dir", s.dataDir).Msg("postgres stopped")
	return nil
}

func (s *Server) removeOwnSocketDir() {
	if s.ownSocketDir {
		_ = os.RemoveAll(s.socketDir)
	}
}

// DSN returns a keyword/value connection string for database dbname over
// the server's unix socket, as the superuser "postgres" with its password;
// pgx and libpq accept it. It is a secret: log it only through a redactor.
func (s *Server) DSN(dbname string) string {
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable",
		quoteDSN(s.socketDir), s.port, superuser, quoteDSN(s.password), quoteDSN(dbname))
}

// PasswordFile returns the file holding the superuser's password,
// DataDir/PasswordFileName.
func (s *Server) PasswordFile() string { return filepath.Join(s.dataDir, PasswordFileName) }

// TCPAddr returns the server's "127.0.0.1:port" address, or "" when it
// listens on its unix socket only (Config.Port < 0).
func (s *Server) TCPAddr() string {
	if !s.tcp {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// SocketDir returns the directory holding the server's unix socket.
func (s *Server) SocketDir() string { return s.socketDir }

// LogPath returns the server's log file, DataDir/LogFileName.
func (s *Server) LogPath() string { return filepath.Join(s.dataDir, LogFileName) }

// quoteDSN quotes a keyword/value DSN value when it needs it.
func quoteDSN(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`+"\t\n") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// readTail returns up to logTailBytes of path written after offset.
func readTail(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", path, err)
	}
	if offset > int64(len(b)) {
		offset = 0
	}
	return tail(b[offset:])
}

func tail(b []byte) string {
	if len(b) > logTailBytes {
		b = b[len(b)-logTailBytes:]
	}
	return strings.TrimSpace(string(b))
}
