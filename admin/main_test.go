package admin

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakDeadline is how long TestMain waits for goroutines to end after the
// tests: raft's connection handlers end when their peers close the
// connections, shortly after the last node stopped.
const leakDeadline = 5 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var err error
		for deadline := time.Now().Add(leakDeadline); time.Now().Before(deadline); {
			if err = goleak.Find(); err == nil {
				break
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
