package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// inheritedDataDir is the name postgres gets for the data directory when
// it cannot reach it by its path: see reachDataDir.
const inheritedDataDir = "/proc/self/fd/3"

// reachDataDir decides how the server's processes name the data directory:
// by its path, normally. When this process runs as root and the run-as
// account cannot search one of the directory's ancestors (the data
// directory sits in root's 0700 home, say), they get the directory as an
// inherited open descriptor, fd 3, named /proc/self/fd/3: the kernel
// resolves that link to the directory without walking its path, and every
// process postgres forks inherits the descriptor. Nothing is opened up: the
// account still cannot reach anything else under that ancestor.
func (s *Server) reachDataDir() error {
	err := s.acct.checkReachable(s.dataDir)
	if !errors.Is(err, errUnreachable) {
		s.pgDataDir = s.dataDir
		return err
	}
	f, err := os.OpenFile(s.dataDir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("open data dir: %w", err)
	}
	s.dirFile, s.pgDataDir = f, inheritedDataDir
	s.log.Info().Str("data_dir", s.dataDir).Str("user", s.acct.name).
		Msg("postgres user cannot reach the data directory by its path: passing it as an open directory")
	return nil
}

// closeDataDir closes the data directory descriptor, if any; the server's
// processes keep their own copies.
func (s *Server) closeDataDir() {
	if s.dirFile != nil {
		_ = s.dirFile.Close()
		s.dirFile = nil
	}
}

// pgPath is path as the server's processes name it: a path inside the data
// directory goes through pgDataDir.
func (s *Server) pgPath(path string) string {
	rel, err := filepath.Rel(s.dataDir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return path
	}
	return filepath.Join(s.pgDataDir, rel)
}

// command runs the PostgreSQL program name as the account, from /, with
// PG* variables removed and the data directory descriptor as fd 3 when
// there is one. sig reaches the child when this process dies.
func (s *Server) command(ctx context.Context, sig syscall.Signal, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, name), args...)
	cmd.Dir = "/"
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = s.acct.sysProcAttr(sig)
	if s.dirFile != nil {
		cmd.ExtraFiles = []*os.File{s.dirFile}
	}
	return cmd
}
