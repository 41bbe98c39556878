package pgtest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/harvestd/harvest/internal/pgserver"
)

// lazy is the harness of a binary whose TestMain does not call Main
// (tests of harvesttest's users): set up by the first Lazy call.
var lazy struct {
	started atomic.Bool
	once    sync.Once
	h       *harness
	err     error
}

// pidFile, in a lazily started harness's temporary directory, holds the
// test process's id: once that process is gone, a later lazy start
// removes the directory (its server died with the process).
const pidFile = "harvest-pgtest.pid"

// Lazy makes sure the harness is up, for binaries whose TestMain does
// not call Main: the first call sets it up as Main would (a private server
// from the local PostgreSQL binaries, or HARVEST_TEST_DSN). Nothing tears
// it down: the private server gets a signal to shut down when the test
// process exits, and the next lazy start of any test binary removes the
// temporary directories of dead processes. It skips t when no server
// binaries exist and HARVEST_TEST_DSN is not set, and fails t on any other
// setup error. With Main it does nothing.
func Lazy(t testing.TB) {
	t.Helper()
	if h != nil {
		return
	}
	lazy.started.Store(true)
	lazy.once.Do(func() {
		removeDeadDirs()
		lazy.h, lazy.err = setup()
		if lazy.err == nil && lazy.h.tmpDir != "" {
			lazy.err = os.WriteFile(filepath.Join(lazy.h.tmpDir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
	})
	switch {
	case lazy.err == nil:
	case errors.Is(lazy.err, pgserver.ErrNoBinaries) && os.Getenv(EnvDSN) == "":
		t.Skipf("pgtest: no PostgreSQL server binaries (initdb and postgres on PATH or under "+
			"/usr/lib/postgresql/*/bin), and %s is not set: install PostgreSQL or point %s at a server", EnvDSN, EnvDSN)
	default:
		t.Fatalf("pgtest: %v", lazy.err)
	}
}

// lazyHarness is the harness Lazy set up, or nil.
func lazyHarness() *harness {
	if !lazy.started.Load() {
		return nil
	}
	lazy.once.Do(func() {}) // waits for a setup in progress
	return lazy.h
}

// removeDeadDirs removes the temporary directories of lazily started
// harnesses whose test processes have exited.
func removeDeadDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "harvest-pgtest-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, pidFile))
		if err != nil {
			continue // not lazy, or not ours to judge
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid != os.Getpid() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}
