package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
)

// Continue-as-new chains (the workload's counter chains, any chain the
// databases hold).
//
// Per chain, named by its first run:
//   - links: following continued_to from the first run visits every run of
//     the chain once; each successor names the chain and its predecessor
//     back and lives on the first run's shard; no run has two successors;
//     every run but the last closed CONTINUED_AS_NEW and the last did not;
//   - a counter chain the workload started has Until/Every (rounded up)
//     runs, as many as its output counts; its output lists every answered
//     add's key exactly once and no key nobody sent it; once all its adds
//     were answered, its last run is COMPLETED with count Until;
//   - per (chain, add key) at most one answer says signal_delivered,
//     whichever run id it was sent to; every answer's run ids are runs of
//     the chain, and an answered add has a SignalReceived in one of them.

// counterOutput is the part of the counter's output the checker reads.
type counterOutput struct {
	Count int      `json:"count"`
	IDs   []string `json:"ids"`
	Runs  int      `json:"runs"`
}

// chainOf is the chain of run id: its first run ("" if no shard holds it).
func (st *DBState) chainOf(id string) string {
	if x := st.execs[id]; x != nil {
		return cmp.Or(x.chainID, x.id)
	}
	return ""
}

// checkChains checks every chain and the counter chains' answers.
func checkChains(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	members := map[string][]*execRow{} // first run -> later runs
	for _, x := range st.execs {
		if x.chainID != "" {
			members[x.chainID] = append(members[x.chainID], x)
		}
	}
	lines := map[string][]*execRow{}
	for _, id := range sortedKeys(members) {
		lines[id] = followChain(st, id, members[id], add)
	}
	checkCounters(ops, st, lines, add)
	checkChainAnswers(ops, st, add)
}

// followChain walks chain first's links and reports what is off its line.
func followChain(st *DBState, first string, members []*execRow, add func(check, format string, args ...any)) []*execRow {
	root := st.execs[first]
	if root == nil {
		add(CheckChainLinks, "chain %s has %d later runs but no shard holds its first run", first, len(members))
		return nil
	}
	successors := map[string]int{}
	for _, m := range members {
		successors[m.continuedFrom]++
	}
	for _, from := range sortedKeys(successors) {
		if n := successors[from]; n > 1 {
			add(CheckChainLinks, "chain %s forks: run %s has %d successors", first, from, n)
		}
	}
	line := walkLinks(st, root, add)
	on := map[string]bool{}
	for _, x := range line {
		on[x.id] = true
	}
	for _, m := range members {
		if !on[m.id] {
			add(CheckChainLinks, "run %s of chain %s (continued from %s) is off the chain's line", m.id, first, m.continuedFrom)
		}
	}
	checkLineStates(st, first, line, add)
	return line
}

// walkLinks follows continued_to from root.
func walkLinks(st *DBState, root *execRow, add func(check, format string, args ...any)) []*execRow {
	line := []*execRow{root}
	seen := map[string]bool{root.id: true}
	for cur := root; cur.continuedTo != ""; {
		next := st.execs[cur.continuedTo]
		switch {
		case next == nil:
			add(CheckChainLinks, "missing link: run %s of chain %s continued to %s, which no shard holds", cur.id, root.id, cur.continuedTo)
			return line
		case seen[next.id]:
			add(CheckChainLinks, "chain %s loops back to run %s", root.id, next.id)
			return line
		case next.chainID != root.id || next.continuedFrom != cur.id:
			add(CheckChainLinks, "run %s continued to %s, which names chain %q and predecessor %q", cur.id, next.id, next.chainID, next.continuedFrom)
		case next.shard != root.shard:
			add(CheckChainLinks, "run %s of chain %s is in shard %d, the chain's first run in %d", next.id, root.id, next.shard, root.shard)
		}
		seen[next.id] = true
		line = append(line, next)
		cur = next
	}
	return line
}

// checkLineStates: every run but the last continued as new or was
// replaced by a reset, the last did not (how it closed is
// CheckCompleted's and CheckChainEnd's).
func checkLineStates(st *DBState, first string, line []*execRow, add func(check, format string, args ...any)) {
	for i, x := range line {
		last := i == len(line)-1
		if !last && x.state != "CONTINUED_AS_NEW" && !st.replacedByReset(x) {
			add(CheckChainLinks, "run %s of chain %s has a successor but is %s", x.id, first, x.state)
		}
		if last && x.state == "CONTINUED_AS_NEW" && x.continuedTo == "" {
			add(CheckChainLinks, "run %s of chain %s continued as new with no successor", x.id, first)
		}
	}
}

// counterAdds are the add keys the workload sent one counter chain, each
// with whether it was answered.
type counterAdds map[string]bool

// counterPlan is what the workload did with one counter chain.
type counterPlan struct {
	start *Op
	adds  counterAdds
}

// counterPlans collects the answered counter starts and their adds by the
// chain's first run.
func counterPlans(ops []*Op) map[string]*counterPlan {
	plans := map[string]*counterPlan{}
	for _, op := range sortedOps(ops) {
		if op.Kind == KindStart && op.Workflow == wfCounter && op.OK && plans[op.ExecID] == nil {
			plans[op.ExecID] = &counterPlan{start: op, adds: counterAdds{}}
		}
	}
	for _, op := range ops {
		if p := plans[op.Chain]; p != nil && op.Kind == KindSignal {
			p.adds[op.Key] = p.adds[op.Key] || op.OK
		}
	}
	return plans
}

// allAnswered reports whether every add of the chain was answered.
func (p *counterPlan) allAnswered() bool {
	n := 0
	for _, ok := range p.adds {
		if !ok {
			return false
		}
		n++
	}
	return n == p.start.Until
}

// checkCounters checks each counter chain's runs and output.
func checkCounters(ops []*Op, st *DBState, lines map[string][]*execRow, add func(check, format string, args ...any)) {
	plans := counterPlans(ops)
	for _, id := range sortedKeys(plans) {
		line := lines[id]
		if line == nil && st.execs[id] != nil {
			line = []*execRow{st.execs[id]} // it never continued
		}
		if line != nil {
			checkCounter(plans[id], line, add)
		}
	}
}

// checkCounter checks one counter chain against what was sent to it.
func checkCounter(p *counterPlan, line []*execRow, add func(check, format string, args ...any)) {
	id, last := p.start.ExecID, line[len(line)-1]
	if last.state != "COMPLETED" {
		if p.allAnswered() {
			add(CheckChainEnd, "chain %s got all its %d adds answered but its last run %s is %s", id, p.start.Until, last.id, last.state)
		}
		return
	}
	var out counterOutput
	if err := json.Unmarshal([]byte(last.output), &out); err != nil {
		add(CheckChainEnd, "chain %s: output %q of run %s: %v", id, last.output, last.id, err)
		return
	}
	if want := (p.start.Until + p.start.Every - 1) / p.start.Every; len(line) != want || out.Runs != len(line) {
		add(CheckChainLinks, "chain %s has %d runs, its output counts %d, want %d (until %d, every %d)",
			id, len(line), out.Runs, want, p.start.Until, p.start.Every)
	}
	if p.allAnswered() && out.Count != p.start.Until {
		add(CheckChainEnd, "chain %s completed with count %d, want %d", id, out.Count, p.start.Until)
	}
	checkReceived(id, p.adds, out.IDs, add)
}

// checkReceived: the chain's output lists each answered add once and
// nothing that was not sent.
func checkReceived(chain string, adds counterAdds, ids []string, add func(check, format string, args ...any)) {
	got := map[string]int{}
	for _, k := range ids {
		got[k]++
	}
	for _, k := range sortedKeys(got) {
		if _, sent := adds[k]; !sent {
			add(CheckChainSignals, "chain %s received add %q, which no client sent it", chain, k)
		} else if got[k] > 1 {
			add(CheckChainSignals, "chain %s received add %q %d times", chain, k, got[k])
		}
	}
	for _, k := range sortedKeys(adds) {
		if adds[k] && got[k] == 0 {
			add(CheckChainSignals, "answered add %q of chain %s is not in its output (lost)", k, chain)
		}
	}
}

// checkChainAnswers checks the answers of the counter adds.
func checkChainAnswers(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	received := map[[2]string]int64{} // (chain, key) -> SignalReceived in any run
	for k, n := range st.signals {
		received[[2]string{st.chainOf(k[0]), k[1]}] += n
	}
	delivered := map[[2]string]int{}
	for _, op := range sortedOps(ops) {
		if op.Chain == "" || op.Kind != KindSignal || !op.OK {
			continue
		}
		k := [2]string{op.Chain, op.Key}
		for _, run := range []string{op.Target, op.Current} {
			if c := st.chainOf(run); run != "" && c != op.Chain {
				add(CheckChainSignals, "add %q of chain %s was answered naming run %s, of chain %q", op.Key, op.Chain, run, c)
			}
		}
		if op.Delivered != nil && *op.Delivered {
			if delivered[k]++; delivered[k] == 2 {
				add(CheckChainSignals, "add %q of chain %s was answered signal_delivered more than once", op.Key, op.Chain)
			}
		}
		if received[k] == 0 {
			add(CheckChainSignals, "answered add %q of chain %s has no SignalReceived in any run of the chain", op.Key, op.Chain)
			received[k] = -1 // once
		}
	}
}

// ChainStats summarizes the counter chains for the report's notes.
func ChainStats(ops []*Op, st *DBState) string {
	plans := counterPlans(ops)
	var runs, completed, adds, later, redirected int
	for id := range plans {
		for _, x := range st.execs {
			if x.id == id || x.chainID == id {
				runs++
				completed += boolInt(x.state == "COMPLETED")
			}
		}
	}
	for _, op := range ops {
		if op.Chain == "" || !op.OK {
			continue
		}
		adds++
		later += boolInt(op.Current != "")
		redirected += boolInt(op.Dup && op.Target != op.Chain)
	}
	return strings.TrimSpace(fmt.Sprintf("counter chains (continue-as-new): %d started, %d runs, %d completed; "+
		"%d add answers, %d reached a later run, %d re-deliveries to a later run id", len(plans), runs, completed, adds, later, redirected))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
