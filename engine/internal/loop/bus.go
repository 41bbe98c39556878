package loop

// Bus is the wake channels of the engine's loops, one per loop a commit
// or a clock advance can wake; each holds at most one pending wake-up.
type Bus struct {
	Workflow, Activity, Timer, Callback, Outbox, Schedule, Deferred, Flow chan struct{}
}

// NewBus makes the channels.
func NewBus() *Bus {
	ch := func() chan struct{} { return make(chan struct{}, 1) }
	return &Bus{Workflow: ch(), Activity: ch(), Timer: ch(), Callback: ch(), Outbox: ch(), Schedule: ch(), Deferred: ch(), Flow: ch()}
}

// Wake nudges the loops s names (Workflow, Timer, Callback, Outbox; not
// Flow, which the engine's settle wakes itself).
func (b *Bus) Wake(s Set) {
	for _, l := range []struct {
		bit Set
		ch  chan struct{}
	}{{Workflow, b.Workflow}, {Timer, b.Timer}, {Callback, b.Callback}, {Outbox, b.Outbox}} {
		if s.Has(l.bit) {
			Nudge(l.ch)
		}
	}
}

// All nudges every loop (a lease just taken: each looks for work).
func (b *Bus) All() {
	for _, ch := range []chan struct{}{b.Workflow, b.Activity, b.Timer, b.Callback, b.Outbox, b.Schedule, b.Deferred, b.Flow} {
		Nudge(ch)
	}
}
