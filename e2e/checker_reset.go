package e2e

import "fmt"

// Resets (the workload's reset chains).
//
//   - A reset key made one run: every answer of the key names the same
//     run, a reset run of the chain of the run it was sent to, which it
//     replays; the chain holds no more reset runs than keys were sent to
//     it.
//   - A reset run's activities carry the keys its source's had: the same
//     activity id, the same idempotency key, so a charge run again after
//     the point is the same charge.

// CheckResetOnce is the check of the resets.
const CheckResetOnce = "reset key -> one run, the activity keys kept"

// replacedByReset reports whether a reset replaced x: its successor is a
// reset run.
func (st *DBState) replacedByReset(x *execRow) bool {
	next := st.execs[x.continuedTo]
	return x.continuedTo != "" && next != nil && next.resetFrom != ""
}

// signalRun is the run a signal keyed key sent to run id landed in: id,
// or the first of its successors (a reset's, a continue-as-new's) that
// holds the key; id when none does. A later run may hold it too, as a
// reset's copy of the signals after its point.
func (st *DBState) signalRun(id, key string) string {
	seen := map[string]bool{}
	for cur := id; cur != "" && !seen[cur]; {
		seen[cur] = true
		if st.signals[[2]string{cur, key}] > 0 {
			return cur
		}
		x := st.execs[cur]
		if x == nil {
			break
		}
		cur = x.continuedTo
	}
	return id
}

// chainOf is the first run of x's chain.
func chainOf(x *execRow) string {
	if x.chainID != "" {
		return x.chainID
	}
	return x.id
}

// checkResets checks every reset key and every reset run.
func checkResets(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	keys := map[string]int{} // chain -> reset keys sent to it
	sent := map[string]bool{}
	for _, op := range ops {
		if op.Kind != KindReset {
			continue
		}
		if t := st.execs[op.Target]; t != nil && !sent[op.Key] {
			sent[op.Key] = true
			keys[chainOf(t)]++
		}
		if op.OK {
			checkResetAnswer(st, op, add)
		}
	}
	runs := map[string]int{}
	for _, id := range sortedKeys(st.execs) {
		if x := st.execs[id]; x.resetFrom != "" {
			runs[chainOf(x)]++
			checkResetKeys(st, x, add)
		}
	}
	for _, c := range sortedKeys(runs) {
		if runs[c] > keys[c] {
			add(CheckResetOnce, "chain %s has %d reset runs for %d reset keys", c, runs[c], keys[c])
		}
	}
	checkResetAnswersAgree(ops, add)
}

// checkResetAnswer: the run an answered reset names is a reset run of
// its target's chain, replaying the target.
func checkResetAnswer(st *DBState, op *Op, add func(check, format string, args ...any)) {
	x, t := st.execs[op.ExecID], st.execs[op.Target]
	switch {
	case x == nil:
		add(CheckResetOnce, "reset %q answered run %s, which no shard holds", op.Key, op.ExecID)
	case t == nil || x.resetFrom != op.Target || chainOf(x) != chainOf(t):
		add(CheckResetOnce, "reset %q of %s answered run %s, which replays %q in chain %s", op.Key, op.Target, op.ExecID, x.resetFrom, chainOf(x))
	}
}

// checkResetAnswersAgree: every answer of a reset key names one run.
func checkResetAnswersAgree(ops []*Op, add func(check, format string, args ...any)) {
	named := map[string]map[string]bool{}
	for _, op := range ops {
		if op.Kind == KindReset && op.OK {
			if named[op.Key] == nil {
				named[op.Key] = map[string]bool{}
			}
			named[op.Key][op.ExecID] = true
		}
	}
	for _, k := range sortedKeys(named) {
		if len(named[k]) > 1 {
			add(CheckResetOnce, "reset %q was answered with %d runs: %v", k, len(named[k]), sortedKeys(named[k]))
		}
	}
}

// checkResetKeys: each activity of reset run x that its source scheduled
// too carries the source's key.
func checkResetKeys(st *DBState, x *execRow, add func(check, format string, args ...any)) {
	for _, k := range sortedKeys(st.actKeyOf) {
		if k[0] != x.id {
			continue
		}
		if src, ok := st.actKeyOf[[2]string{x.resetFrom, k[1]}]; ok && src != st.actKeyOf[k] {
			add(CheckResetOnce, "reset run %s activity %s has key %q, its source %s had %q", x.id, k[1], st.actKeyOf[k], x.resetFrom, src)
		}
	}
}

// ResetStats notes the resets: sent, answered, runs made, and how many
// activities of reset runs kept their source's key.
func ResetStats(ops []*Op, st *DBState) string {
	var sent, answered, dups int
	for _, op := range ops {
		if op.Kind != KindReset {
			continue
		}
		sent++
		if op.OK {
			answered++
		}
		if op.Dup {
			dups++
		}
	}
	var runs, kept int
	for _, x := range st.execs {
		if x.resetFrom == "" {
			continue
		}
		runs++
		for k, key := range st.actKeyOf {
			if k[0] == x.id && st.actKeyOf[[2]string{x.resetFrom, k[1]}] == key {
				kept++
			}
		}
	}
	return fmt.Sprintf("resets: %d sent (%d re-deliveries), %d answered, %d reset runs; %d of their activities carry their source's key",
		sent, dups, answered, runs, kept)
}
