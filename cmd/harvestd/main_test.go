package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/harvestd/harvest/internal/pgtest"
)

// asMainEnv set to "1" makes the test binary run main instead of the
// tests: the end-to-end tests run this binary as harvestd. That replaces a
// separate go build: the binary carries the tests' flags (-race included)
// and leaves nothing to delete, which matters because pgtest.Main exits
// without returning.
const asMainEnv = "HARVESTD_TEST_AS_MAIN"

// harvestdBin is the binary the end-to-end tests run as harvestd: this
// one.
var harvestdBin string

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: locate the test binary: %v\n", err)
		os.Exit(1)
	}
	harvestdBin = bin
	pgtest.Main(m) // the shard databases of the cluster tests
}
