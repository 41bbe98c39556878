package loop

// Set names the engine's loops that have work after a commit, one bit
// each.
type Set uint8

// The loops a commit can wake.
const (
	Workflow Set = 1 << iota
	Timer
	Callback
	Outbox
	// Flow is the flow dispatcher: runs were queued (the engine's settle
	// tells it; Bus.Wake does not nudge it).
	Flow
)

// Add adds l to s when cond holds.
func (s *Set) Add(l Set, cond bool) {
	if cond {
		*s |= l
	}
}

// Has reports whether s names l.
func (s Set) Has(l Set) bool { return s&l != 0 }
