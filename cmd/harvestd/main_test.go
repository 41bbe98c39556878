package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// harvestdBin is the binary the end-to-end tests run, built once by
// TestMain from this package.
var harvestdBin string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "harvestd-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	harvestdBin = filepath.Join(dir, "harvestd")
	args := []string{"build", "-o", harvestdBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	// The tests run in the package directory, so "." is cmd/harvestd.
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build harvestd: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
