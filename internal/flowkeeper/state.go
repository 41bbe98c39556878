package flowkeeper

import (
	"cmp"
	"slices"

	"github.com/harvestd/harvest"
)

// TurnScale is the fairness turn a start of weight 1 advances its
// fairness key by; weight w advances it by TurnScale / w (the engine's
// per-shard turns use the same scale).
const TurnScale = 1000

// State is a key's slots: the runs that hold one and the runs waiting,
// in the order the keeper grants them. It is the keeper's input, so that
// a continue-as-new carries it whole.
type State struct {
	// Workflow and Key name the limited workflow and the concurrency key.
	Workflow string `json:"workflow"`
	Key      string `json:"key"`
	// Max is the limit in force, as the latest acquire carried it.
	Max int `json:"max"`
	// Holders hold a slot, Waiting wait for one.
	Holders []Entry `json:"holders,omitempty"`
	Waiting []Entry `json:"waiting,omitempty"`
	// Released are the chains whose release came before their acquire
	// (the outbox performs rows in no set order): their acquire, when it
	// comes, is dropped. Refused are the chains whose grant their run
	// refused (it closed) before their release came: the release, when
	// it comes, is not remembered. Each chain has one acquire and one
	// release, so every mark is taken out again.
	Released []string `json:"released,omitempty"`
	Refused  []string `json:"refused,omitempty"`
	// Arrivals numbers the acquires, for the order within a priority
	// and turn.
	Arrivals int64 `json:"arrivals,omitempty"`
	// Every is how many signals a run handles before it continues as
	// new (RunSignals when 0); Runs counts the chain's earlier runs.
	Every int `json:"every,omitempty"`
	Runs  int `json:"runs,omitempty"`
}

// Entry is one run's claim: a holder's slot or a waiter's place.
type Entry struct {
	// Chain is the run's chain id: its slot outlives a continue-as-new.
	Chain string `json:"chain"`
	// Execution is the run the grant is sent to.
	Execution string `json:"execution"`
	// Priority (1 first … 5), Fairness and Turn order the waiters.
	Priority int    `json:"priority"`
	Fairness string `json:"fairness,omitempty"`
	Turn     int64  `json:"turn"`
	Arrival  int64  `json:"arrival"`
}

// Acquire is the payload of the acquire signal: a run of the key wants a
// slot.
type Acquire struct {
	Chain     string `json:"chain"`
	Execution string `json:"execution"`
	Priority  int    `json:"priority"`
	Fairness  string `json:"fairness,omitempty"`
	// Weight is the fairness key's weight (1 when 0).
	Weight int `json:"weight,omitempty"`
	// Max is the limit in force when the run started.
	Max int `json:"max"`
	// Held: the run runs already (it started before its limit was
	// counted across the cluster): it holds a slot at once, over the
	// limit if need be, and is sent no grant.
	Held bool `json:"held,omitempty"`
}

// Release is the payload of the release signal: the chain closed, or its
// run was cancelled while it waited.
type Release struct {
	Chain string `json:"chain"`
}

// Grant is the payload of the grant signal the keeper sends a run: its
// chain holds a slot.
type Grant struct {
	Chain string `json:"chain"`
}

// Acquire records a's claim and returns the waiters it lets hold a slot
// now. A chain that holds or waits already is not counted twice.
func (s *State) Acquire(a Acquire) []Entry {
	if a.Max > 0 {
		s.Max = a.Max
	}
	if s.find(a.Chain) {
		return s.grants()
	}
	if unmark(&s.Released, a.Chain) {
		return nil // its chain closed already
	}
	s.Arrivals++
	e := Entry{Chain: a.Chain, Execution: a.Execution, Priority: cmp.Or(a.Priority, harvest.PriorityDefault),
		Fairness: a.Fairness, Turn: s.lastTurn(a.Fairness) + TurnScale/int64(max(a.Weight, 1)), Arrival: s.Arrivals}
	if a.Held {
		s.Holders = append(s.Holders, e)
		return nil
	}
	s.Waiting = append(s.Waiting, e)
	return s.grants()
}

// Release frees the chain's slot, or takes it out of the waiters, and
// returns the waiters that hold a slot now. A release of a chain the
// keeper does not know came before its acquire: it is remembered, so that
// the acquire is dropped.
func (s *State) Release(r Release) []Entry {
	switch {
	case s.find(r.Chain):
		return s.drop(r.Chain)
	case unmark(&s.Refused, r.Chain):
	case !slices.Contains(s.Released, r.Chain):
		s.Released = append(s.Released, r.Chain)
	}
	return nil
}

// Refuse frees the slot of a chain whose run refused its grant (it
// closed, its release not here yet) and returns the waiters that hold a
// slot now; the release, when it comes, changes nothing.
func (s *State) Refuse(chain string) []Entry {
	if !s.find(chain) {
		return nil // released already
	}
	s.Refused = append(s.Refused, chain)
	return s.drop(chain)
}

// drop frees the chain's slot, or takes it out of the waiters, and
// returns the waiters that hold a slot now.
func (s *State) drop(chain string) []Entry {
	s.Holders = slices.DeleteFunc(s.Holders, func(e Entry) bool { return e.Chain == chain })
	s.Waiting = slices.DeleteFunc(s.Waiting, func(e Entry) bool { return e.Chain == chain })
	return s.grants()
}

// unmark takes chain out of marks, and reports whether it was there.
func unmark(marks *[]string, chain string) bool {
	i := slices.Index(*marks, chain)
	if i >= 0 {
		*marks = slices.Delete(*marks, i, i+1)
	}
	return i >= 0
}

// find reports whether the chain holds or waits.
func (s *State) find(chain string) bool {
	is := func(e Entry) bool { return e.Chain == chain }
	return slices.ContainsFunc(s.Holders, is) || slices.ContainsFunc(s.Waiting, is)
}

// lastTurn is the last turn of the live claims (held or waiting) of a
// fairness key, 0 when it has none: a key's turns advance however long
// its backlog, and a key back after a pause starts level with the rest.
func (s *State) lastTurn(fairness string) int64 {
	var last int64
	for _, e := range slices.Concat(s.Holders, s.Waiting) {
		if e.Fairness == fairness {
			last = max(last, e.Turn)
		}
	}
	return last
}

// grants moves the first waiters into the free slots and returns them.
func (s *State) grants() []Entry {
	free := s.Max - len(s.Holders)
	if free <= 0 || len(s.Waiting) == 0 {
		return nil
	}
	slices.SortStableFunc(s.Waiting, order)
	n := min(free, len(s.Waiting))
	out := slices.Clone(s.Waiting[:n])
	s.Holders = append(s.Holders, out...)
	s.Waiting = slices.Delete(s.Waiting, 0, n)
	return out
}

// order is the grant order: priority, then fairness turn, then arrival.
func order(a, b Entry) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Turn, b.Turn), cmp.Compare(a.Arrival, b.Arrival))
}
