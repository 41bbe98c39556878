package pgserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// debianBinGlob is where Debian and Ubuntu install each PostgreSQL version.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// findBinDir returns a directory holding both initdb and postgres: binDir
// when set, else the directory initdb on PATH resolves to, else the newest
// Debian-style install.
func findBinDir(binDir string) (string, error) {
	if binDir != "" {
		if !hasBinaries(binDir) {
			return "", fmt.Errorf("bin dir %s: %w", binDir, ErrNoBinaries)
		}
		return binDir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if resolved, err := filepath.EvalSymlinks(p); err == nil && hasBinaries(filepath.Dir(resolved)) {
			return filepath.Dir(resolved), nil
		}
	}
	dirs, _ := filepath.Glob(debianBinGlob)
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if hasBinaries(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func hasBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionOf reads the major version from /usr/lib/postgresql/<v>/bin; 0 if
// it is not a number.
func versionOf(binDir string) int {
	v, err := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	if err != nil {
		return 0
	}
	return v
}

// cleanEnv is the environment for initdb and postgres: this process's,
// without PG* variables that could redirect them.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PG")
	})
}
