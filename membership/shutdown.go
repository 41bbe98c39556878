package membership

// Shutdown stops gossip WITHOUT announcing a leave, the way a crashed or
// partitioned process disappears: peers declare this node dead after their
// failure detection. For fault drills and tests; use Stop otherwise.
func (m *Membership) Shutdown() { m.stop(false) }
