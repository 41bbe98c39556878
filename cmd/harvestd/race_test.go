//go:build race

package main

// raceEnabled builds the binary under test with -race too, when the tests
// themselves run with it.
const raceEnabled = true
