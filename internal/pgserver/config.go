package pgserver

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

const (
	// RunAsUserDefault is the OS user the server runs as when this process
	// runs as root.
	RunAsUserDefault = "postgres"

	// StartTimeoutDefault bounds initdb plus server start-up when ctx has no
	// earlier deadline.
	StartTimeoutDefault = 60 * time.Second

	// StopTimeoutDefault is how long Stop waits for a fast shutdown before it
	// kills the server's process group.
	StopTimeoutDefault = 30 * time.Second

	// MaxConnectionsDefault is the server's max_connections.
	MaxConnectionsDefault = 300

	// unixOnlyPort names the socket file when the server listens on no TCP
	// port (Port < 0); the socket directory is private, so it cannot clash.
	unixOnlyPort = 5432

	// autovacuumNaptime is how often autovacuum visits each database
	// (PostgreSQL's default is one minute).
	autovacuumNaptime = "5s"

	// maxSocketPath keeps the socket path (directory plus "/.s.PGSQL.NNNNN")
	// below the kernel's sun_path limit of 108 bytes, with a margin.
	maxSocketPath = 100
)

// Config describes one private PostgreSQL server.
type Config struct {
	// DataDir is the PostgreSQL data directory. Required. Start runs initdb
	// when it holds no PG_VERSION file and reuses it otherwise.
	DataDir string

	// SocketDir is the directory of the server's unix socket. Default:
	// DataDir/sock, or a fresh directory under os.TempDir() when that path
	// would make the socket path too long for the kernel (>= 100 bytes).
	// Start makes a default directory mode 0700; a directory named here is
	// created 0700 when missing and otherwise left as it is, so it should
	// be private too (the socket demands the password either way).
	SocketDir string

	// Port is the TCP port on 127.0.0.1. Default 0 picks a free port; a
	// negative port disables TCP so the server listens on its unix socket
	// only.
	Port int

	// BinDir holds initdb and postgres. Default: the directory of initdb on
	// PATH, else the newest /usr/lib/postgresql/*/bin.
	BinDir string

	// RunAsUser is the OS user that runs initdb and postgres. It is used
	// only when this process runs as root. Default RunAsUserDefault.
	RunAsUser string

	// Fsync turns fsync on. Default false, which also turns off
	// synchronous_commit and full_page_writes: fast, but a machine crash
	// can lose or corrupt data. That is fine for tests and development only.
	Fsync bool

	// MaxConnections is max_connections. Default MaxConnectionsDefault.
	MaxConnections int

	// StartTimeout bounds Start when ctx has no earlier deadline. Default
	// StartTimeoutDefault.
	StartTimeout time.Duration

	// StopTimeout bounds the fast shutdown in Stop. Default
	// StopTimeoutDefault.
	StopTimeout time.Duration

	// Logger receives lifecycle messages. The server's own log goes to
	// DataDir/harvest-postgres.log. The zero Logger discards.
	Logger zerolog.Logger
}

// Validate reports whether c is usable; zero values mean defaults.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("pgserver config: DataDir is required")
	}
	if c.Port > 65535 {
		return fmt.Errorf("pgserver config: port %d out of range", c.Port)
	}
	if c.MaxConnections < 0 || c.StartTimeout < 0 || c.StopTimeout < 0 {
		return errors.New("pgserver config: MaxConnections and timeouts must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.RunAsUser = cmp.Or(c.RunAsUser, RunAsUserDefault)
	c.MaxConnections = cmp.Or(c.MaxConnections, MaxConnectionsDefault)
	c.StartTimeout = cmp.Or(c.StartTimeout, StartTimeoutDefault)
	c.StopTimeout = cmp.Or(c.StopTimeout, StopTimeoutDefault)
	return c
}
