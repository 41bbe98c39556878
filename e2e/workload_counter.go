package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
)

// Counter chains: the continue-as-new part of the workload.
//
// A counter chain starts the demo counter with a small Every (2 or 3
// signals per run) and Until (5 to 8 signals), so that it continues as new
// a few times, then sends it Until keyed "add" signals, each with its own
// key and its key as the payload's id (the counter's output lists the ids
// the whole chain received). An add goes to the chain's first run or to
// the latest run the answers have named so far (a signal's
// current_execution_id), at random; a deliberate re-delivery of it goes to
// the other of the two, so that the chain-scoped key dedup is exercised
// across runs. The checker (checker_chain.go) follows each chain.

// chainRuns is what a counter chain's client knows of its runs.
type chainRuns struct {
	first, latest string
}

// counterChain starts counter n and sends it its adds.
func counterChain(n int64) chain {
	every, until := 2+rand.IntN(2), 5+rand.IntN(4)
	key := fmt.Sprintf("cnt-%d", n)
	ops := []*Op{{Kind: KindStart, Workflow: wfCounter, Key: key, Every: every, Until: until}}
	for i := range until {
		ops = append(ops, &Op{Kind: KindSignal, Workflow: wfCounter, Key: fmt.Sprintf("%s-add-%d", key, i)})
	}
	return chain{ops: ops, runs: &chainRuns{}}
}

// counterAdd is the request of a counter add: its key is its id.
func counterAdd(op *Op) request {
	return request{http.MethodPost, "/api/harvest/workflows/" + op.Target + "/signal/" + sigAdd, op.Key,
		map[string]any{"id": op.Key, "n": 1}}
}

// learn records what an answer of the chain says of its runs.
func (r *chainRuns) learn(op *Op) {
	if r == nil {
		return
	}
	if op.Kind == KindStart && r.first == "" {
		r.first, r.latest = op.ExecID, op.ExecID
	}
	if op.Current != "" {
		r.latest = op.Current
	}
}

// address sends a counter add to the first or the latest known run.
func (r *chainRuns) address(op *Op) {
	if r == nil || op.Kind != KindSignal || r.first == "" {
		return
	}
	op.Target = r.first
	if rand.IntN(2) == 0 {
		op.Target = r.latest
	}
}

// redirect sends a re-delivery of a counter add to the other known run
// (the same one while the chain has one known run).
func (r *chainRuns) redirect(op *Op) {
	if r == nil || op.Kind != KindSignal || r.first == "" {
		return
	}
	if op.Target == r.first {
		op.Target = r.latest
	} else {
		op.Target = r.first
	}
}
