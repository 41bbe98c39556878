//go:build !race

package api

// raceEnabled: the race detector multiplies memory, so memory bounds do
// not hold under it.
const raceEnabled = false
