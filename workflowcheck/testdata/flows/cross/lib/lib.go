// Package lib has helpers that a workflow of another package calls.
package lib

import (
	"math/rand"
	"time"
)

// Jitter is non-deterministic itself.
func Jitter() int { // want Jitter:"nondeterministic\\(math/rand.Intn in workflow code: use harvest.SideEffect \\(lib.go:\\d+\\)\\)"
	return rand.Intn(10)
}

// Backoff is non-deterministic through Jitter.
func Backoff(n int) int { // want Backoff:"nondeterministic\\(math/rand.Intn.*via lib.Jitter\\)"
	return n * Jitter()
}

// Clock has a non-deterministic method.
type Clock struct{}

// Stamp reads the wall clock.
func (Clock) Stamp() time.Time { // want Stamp:"nondeterministic\\(time.Now"
	return time.Now()
}

// Double is deterministic.
func Double(n int) int { return 2 * n }

// Run is a workflow function declared here, registered elsewhere.
func Run(n int) int { return Backoff(n) } // want Run:"nondeterministic\\(math/rand.Intn.*via lib.Backoff, lib.Jitter\\)"
