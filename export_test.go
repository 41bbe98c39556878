package harvest

import (
	"bytes"
	"runtime/pprof"
)

// ParkedCoroutines counts the goroutines running a workflow coroutine
// (runState.spawn's body): live runs park theirs between tasks. Counting
// stacks, not runtime.NumGoroutine, leaves out the idle carriers a new
// run reuses (coroutines.go).
func ParkedCoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	n := 0
	for _, g := range bytes.Split(buf.Bytes(), []byte("\n\n")) {
		if bytes.Contains(g, []byte("harvest.(*runState).spawn.func")) {
			n++
		}
	}
	return n
}
