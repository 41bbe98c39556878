package admin

// Abandon shuts raft down without a leadership transfer, the way a crashed
// process disappears. For fault drills and tests; use Stop otherwise.
func (a *Admin) Abandon() { a.stop(false) }
