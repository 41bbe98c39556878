package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// prepareDataDir creates dir when missing and checks it is a directory.
// Mode 0755 lets a managed server running as another user (when harvestd
// runs as root) reach its data directory below.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrDataDir, dir)
	}
	return nil
}

// loadNodeID reads DataDir/node-id, or generates an id and persists it
// there when the file does not exist.
func loadNodeID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, NodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if err := checkNodeID(id); err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrDataDir, path, err)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: read node id: %w", ErrDataDir, err)
	}
	id := newNodeID()
	if err := writeFileAtomic(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("%w: write node id: %w", ErrDataDir, err)
	}
	return id, nil
}

// newNodeID is "<hostname>-<8 random hex digits>", readable in the lease
// row yet unique for several nodes on one host.
func newNodeID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	host, err := os.Hostname()
	if err != nil || checkNodeID(host) != nil || len(host) > maxNodeIDLen-len("-xxxxxxxx") {
		host = "node"
	}
	return host + "-" + hex.EncodeToString(b)
}

// writeFileAtomic writes data to a temporary file beside path, syncs it
// and renames it into place, so a crash leaves no half-written id.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // a no-op after the rename
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
