//go:build race

package api

// raceEnabled: the race detector multiplies memory, so a memory bound
// has a race build's figure beside its own.
const raceEnabled = true
