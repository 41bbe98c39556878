package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Deferred starts (the workload's debounce, batch and throttle starts,
// workload_deferred.go).
//
// The checker relates runs to the items the shards hold (harvest_deferred),
// not to the client's submissions, which are not idempotent: a
// submission retried after a lost answer may have made an item, or joined
// one, twice. Per item of a policy key the workload used:
//   - it fired after the heal (state started; pending, firing or failed
//     is a violation);
//   - a fired item has exactly one run with the key hv:deferred:<id>, in
//     any shard, the run its item records; an item not fired has none,
//     and a run of that prefix names an item some shard holds;
//   - the run's input is the item's (and, for a debounce, its workflow
//     id), and the item's input is made of the workload's attempts: each
//     token an attempt of a submission to the item's policy and key;
//   - an attempt answered 202 put its input into exactly the item its
//     answer named (a debounce's: that item exists; its input may be
//     overwritten by a later start), an attempt whose answer was lost
//     into at most one item, a refused one (4xx, 429) into none;
//   - a batch lists its inputs in arrival order (of two answered
//     submissions, the one answered before the other began comes first)
//     and as many as its starts;
//   - a debounce runs the last input of its burst: no submission answered
//     with the item began after the one whose answered input it runs
//     ended;
//   - a throttle key's items are due per/rate apart (per shard: a drain
//     gives the key a pace of its own on the next shard).

// Check names of the deferred part.
const (
	CheckDeferredFired = "deferred item fires after the heal"
	CheckDeferredOnce  = "fired deferred item -> exactly one run"
	CheckDeferredInput = "deferred start's input -> in one fired run"
	CheckThrottlePace  = "throttle key -> slots per/rate apart"
)

// deferredKeyPrefix begins a deferred fire's start key
// (engine.DeferredKeyPrefix).
const deferredKeyPrefix = "hv:deferred:"

// deferredRow is one deferred item as the checker reads it.
type deferredRow struct {
	shard                                  uint16
	id, policy, workflow, key, state, wfID string
	input, execID, reason                  string
	starts                                 int
	firstAt, fireAt, updatedAt             time.Time
}

// readDeferred reads the shard's deferred items and the inputs of the
// runs they fired (and of the webhook deliveries' runs).
func (st *DBState) readDeferred(ctx context.Context, shard uint16, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT deferred_id::text, policy, workflow_name, policy_key, state, workflow_id, coalesce(input::text, 'null'),
		       coalesce(execution_id::text, ''), reason, starts, first_at, fire_at, updated_at
		  FROM harvest_deferred`)
	if err != nil {
		return err
	}
	for rows.Next() {
		d := &deferredRow{shard: shard}
		if err := rows.Scan(&d.id, &d.policy, &d.workflow, &d.key, &d.state, &d.wfID, &d.input, &d.execID, &d.reason,
			&d.starts, &d.firstAt, &d.fireAt, &d.updatedAt); err != nil {
			return err
		}
		st.deferred = append(st.deferred, d)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = conn.Query(ctx, `SELECT execution_id::text, coalesce(input::text, 'null') FROM harvest_executions
		 WHERE idempotency_key LIKE 'hv:deferred:%' OR idempotency_key LIKE 'hv:webhook:%'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, input string
		if err := rows.Scan(&id, &input); err != nil {
			return err
		}
		st.runInputs[id] = input
	}
	return rows.Err()
}

// sentAttempt is one attempt of a deferred submission.
type sentAttempt struct {
	op      *Op
	attempt int
}

// answered: this attempt's 202 answered its submission.
func (a sentAttempt) answered() bool { return a.op.OK && a.attempt == len(a.op.Attempts)-1 }

// refused: a definite refusal, which committed nothing.
func (a sentAttempt) refused() bool {
	s := a.op.Attempts[a.attempt].Status
	return s/100 == 4
}

// tokensOf reads the tokens of an item's input: a batch's list, or the
// one input of the others; ok is false when the input is not shaped so.
func tokensOf(policy, input string) (toks []string, ok bool) {
	type in struct {
		Token string `json:"token"`
	}
	if policy == KindBatch {
		var list []in
		if json.Unmarshal([]byte(input), &list) != nil {
			return nil, false
		}
		for _, x := range list {
			toks = append(toks, x.Token)
		}
		return toks, true
	}
	var x in
	if json.Unmarshal([]byte(input), &x) != nil || x.Token == "" {
		return nil, false
	}
	return []string{x.Token}, true
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// checkDeferred checks the deferred items, their runs and where each
// submission's input went.
func checkDeferred(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	sent := map[string]sentAttempt{} // token ->
	keys := map[[2]string]bool{}     // (policy, key) the workload used
	answeredTo := map[string][]*Op{} // item id -> submissions answered with it
	for _, op := range sortedOps(ops) {
		if !isDeferredOp(op) {
			continue
		}
		keys[[2]string{op.Kind, op.PolicyKey}] = true
		for i := range op.Attempts {
			sent[deferredToken(op.ID, i)] = sentAttempt{op, i}
		}
		if op.OK {
			answeredTo[op.DeferredID] = append(answeredTo[op.DeferredID], op)
		}
	}
	runs := map[string][]*execRow{} // item id -> runs of its key
	for _, id := range sortedKeys(st.execs) {
		if x := st.execs[id]; strings.HasPrefix(x.ik, deferredKeyPrefix) {
			item := strings.TrimPrefix(x.ik, deferredKeyPrefix)
			runs[item] = append(runs[item], x)
		}
	}
	items := map[string]*deferredRow{}
	for _, d := range st.deferred {
		items[d.id] = d
	}
	for _, item := range sortedKeys(runs) {
		if items[item] == nil {
			for _, x := range runs[item] {
				add(CheckPhantom, "execution %s has the key %q of a deferred item no shard holds", x.id, x.ik)
			}
		}
	}
	placed := map[string][]string{} // token -> items whose input holds it
	for _, d := range sortedDeferred(st.deferred) {
		if !keys[[2]string{d.policy, d.key}] {
			add(CheckPhantom, "deferred item %s (%s %q) of a key no client used", d.id, d.policy, d.key)
			continue
		}
		checkItem(d, runs[d.id], st, add)
		toks, ok := tokensOf(d.policy, d.input)
		if !ok {
			add(CheckDeferredInput, "%s item %s has the input %s, not the workload's", d.policy, d.id, d.input)
			continue
		}
		if d.policy == KindBatch && len(toks) != d.starts || d.policy == KindThrottle && d.starts != 1 {
			add(CheckDeferredInput, "%s item %s holds %d starts and %d inputs", d.policy, d.id, d.starts, len(toks))
		}
		for _, tok := range toks {
			a, ok := sent[tok]
			if !ok || a.op.Kind != d.policy || a.op.PolicyKey != d.key {
				add(CheckDeferredInput, "%s item %s (key %q) holds the input %q, which no attempt to its key sent", d.policy, d.id, d.key, tok)
				continue
			}
			placed[tok] = append(placed[tok], d.id)
		}
		if d.policy == KindBatch {
			checkBatchOrder(d, toks, sent, add)
		}
		if d.policy == KindDebounce && len(toks) == 1 {
			checkDebounceLast(d, sent[toks[0]], answeredTo[d.id], add)
		}
		if n := len(answeredTo[d.id]); n > d.starts {
			add(CheckDeferredInput, "%s item %s holds %d starts, %d submissions were answered with it", d.policy, d.id, d.starts, n)
		}
	}
	for _, tok := range sortedKeys(sent) {
		checkAttempt(tok, sent[tok], placed[tok], items, add)
	}
	checkThrottlePace(st.deferred, add)
}

// checkItem checks that an item fired, once, into the run its key names.
func checkItem(d *deferredRow, runs []*execRow, st *DBState, add func(check, format string, args ...any)) {
	fired := d.state == "started" || d.state == "firing"
	if d.state != "started" {
		add(CheckDeferredFired, "%s item %s (key %q, shard %d) is %s after the heal%s (first start %s, due %s, last change %s)",
			d.policy, d.id, d.key, d.shard, d.state, reasonNote(d.reason), clock(d.firstAt), clock(d.fireAt), clock(d.updatedAt))
	}
	switch {
	case !fired && len(runs) > 0:
		add(CheckDeferredOnce, "%s item %s is %s and has %d runs of its key: %s", d.policy, d.id, d.state, len(runs), runIDs(runs))
		return
	case !fired:
		return
	case len(runs) == 0:
		add(CheckDeferredOnce, "%s item %s (key %q) is %s and no shard holds a run of its key", d.policy, d.id, d.key, d.state)
		return
	case len(runs) > 1:
		add(CheckDeferredOnce, "%s item %s has %d runs of its key: %s", d.policy, d.id, len(runs), runIDs(runs))
	}
	if d.state == "started" && (st.execs[d.execID] == nil || st.execs[d.execID].ik != deferredKeyPrefix+d.id) {
		add(CheckDeferredOnce, "%s item %s records run %q, which is not a run of its key (%s)", d.policy, d.id, d.execID, runIDs(runs))
	}
	x := runs[0]
	if x.name != d.workflow || d.policy == KindDebounce && x.wfID != d.wfID {
		add(CheckDeferredInput, "%s item %s (%s/%s) ran as %s/%s", d.policy, d.id, d.workflow, d.wfID, x.name, x.wfID)
	}
	if in, ok := st.runInputs[x.id]; !ok || !sameJSON(in, d.input) {
		add(CheckDeferredInput, "%s item %s holds the input %s, its run %s got %s", d.policy, d.id, d.input, x.id, in)
	}
}

// checkAttempt checks where one attempt's input went.
func checkAttempt(tok string, a sentAttempt, in []string, items map[string]*deferredRow, add func(check, format string, args ...any)) {
	op := a.op
	switch {
	case a.answered():
		d := items[op.DeferredID]
		if d == nil {
			add(CheckDeferredInput, "op %d %s %q was answered with item %q, which no shard holds", op.ID, op.Kind, op.PolicyKey, op.DeferredID)
			return
		}
		if d.policy != op.Kind || d.key != op.PolicyKey {
			add(CheckDeferredInput, "op %d %s %q was answered with item %s, a %s item of key %q", op.ID, op.Kind, op.PolicyKey, d.id, d.policy, d.key)
		}
		switch {
		case op.Kind == KindDebounce && len(in) == 0:
			// Overwritten by a later start of its item (checkDebounceLast).
		case len(in) != 1 || in[0] != op.DeferredID:
			add(CheckDeferredInput, "op %d %s %q: the input %q of its answered attempt (item %s) is in the items [%s]",
				op.ID, op.Kind, op.PolicyKey, tok, op.DeferredID, strings.Join(in, " "))
		}
	case a.refused() && len(in) > 0:
		add(CheckDeferredInput, "op %d %s %q: the input %q of an attempt refused %d is in the items [%s]",
			op.ID, op.Kind, op.PolicyKey, tok, op.Attempts[a.attempt].Status, strings.Join(in, " "))
	case len(in) > 1:
		add(CheckDeferredInput, "op %d %s %q: the input %q of an unanswered attempt is in %d items: %s",
			op.ID, op.Kind, op.PolicyKey, tok, len(in), strings.Join(in, " "))
	}
}

// checkBatchOrder checks that a batch lists its answered inputs in the
// order they were answered.
func checkBatchOrder(d *deferredRow, toks []string, sent map[string]sentAttempt, add func(check, format string, args ...any)) {
	for i, ti := range toks {
		for _, tj := range toks[i+1:] {
			a, b := sent[ti], sent[tj]
			if a.op == nil || b.op == nil || !a.answered() || !b.answered() {
				continue
			}
			if b.op.End.Before(a.op.Begin) {
				add(CheckDeferredInput, "batch item %s lists %q (op %d) before %q (op %d), which was answered before that op began",
					d.id, ti, a.op.ID, tj, b.op.ID)
			}
		}
	}
}

// checkDebounceLast checks that a debounce item runs the last input of
// its burst: no submission answered with the item began after the one
// whose input it holds had ended. Only an answered attempt's input is
// known to have joined before its op ended: an attempt the client gave
// up on may still join later (held by a paused node).
func checkDebounceLast(d *deferredRow, last sentAttempt, answered []*Op, add func(check, format string, args ...any)) {
	if last.op == nil || !last.answered() {
		return
	}
	for _, op := range answered {
		if op != last.op && op.Begin.After(last.op.End) {
			add(CheckDeferredInput, "debounce item %s holds the input of op %d, op %d joined it after that op was answered",
				d.id, last.op.ID, op.ID)
			return
		}
	}
}

// checkThrottlePace checks that a throttle key's items are due per/rate
// apart on each shard.
func checkThrottlePace(items []*deferredRow, add func(check, format string, args ...any)) {
	byKey := map[string][]*deferredRow{}
	for _, d := range items {
		if d.policy == KindThrottle {
			k := fmt.Sprintf("%d %s %s", d.shard, d.workflow, d.key)
			byKey[k] = append(byKey[k], d)
		}
	}
	gap := throttlePer / throttleRate
	for _, k := range sortedKeys(byKey) {
		ds := byKey[k]
		sort.Slice(ds, func(i, j int) bool { return ds[i].fireAt.Before(ds[j].fireAt) })
		for i := 1; i < len(ds); i++ {
			if d := ds[i].fireAt.Sub(ds[i-1].fireAt); d < gap-time.Microsecond {
				add(CheckThrottlePace, "throttle key %q on shard %d: items %s and %s are due %s apart (want at least %s)",
					ds[i].key, ds[i].shard, ds[i-1].id, ds[i].id, d, gap)
			}
		}
	}
}

func reasonNote(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// DeferredOpenedAfter counts the items a start opened after t, and
// says when the last was opened (a start whose answer a fault lost may
// commit after the heal: DBState.Open).
func (st *DBState) DeferredOpenedAfter(t time.Time) (n int, last time.Time) {
	for _, d := range st.deferred {
		if d.firstAt.After(t) {
			n++
		}
		if d.firstAt.After(t) && d.firstAt.After(last) {
			last = d.firstAt
		}
	}
	return n, last
}

// clock is a time of day to the millisecond, in UTC, as the chaos
// suite's log prints the heal.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func runIDs(runs []*execRow) string {
	ids := make([]string, len(runs))
	for i, x := range runs {
		ids[i] = x.id
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}

func sortedDeferred(ds []*deferredRow) []*deferredRow {
	s := append([]*deferredRow(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i].id < s[j].id })
	return s
}

// DeferredStats summarizes the deferred starts for the report's notes.
func DeferredStats(ops []*Op, st *DBState) string {
	subs, answeredBy := map[string]int{}, map[string]int{}
	var answered, attempts, lost, throttled int
	for _, op := range ops {
		if !isDeferredOp(op) {
			continue
		}
		subs[op.Kind]++
		attempts += len(op.Attempts)
		if op.OK {
			answered++
			answeredBy[op.Kind]++
		}
		for i, a := range op.Attempts {
			switch {
			case a.Status == 429:
				throttled++
			case a.Status/100 != 2 && (!op.OK || i < len(op.Attempts)-1):
				lost++
			}
		}
	}
	items, starts, fired := map[string]int{}, map[string]int{}, 0
	full := 0
	for _, d := range st.deferred {
		items[d.policy]++
		starts[d.policy] += d.starts
		if d.state == "started" {
			fired++
		}
		if d.policy == KindBatch && d.starts >= batchMaxSize {
			full++
		}
	}
	// Every answered submission is one start of an item: the starts beyond
	// them are attempts whose answer was lost after they committed.
	extra := 0
	for _, k := range []string{KindDebounce, KindBatch, KindThrottle} {
		extra += starts[k] - answeredBy[k]
	}
	runs := 0
	for _, x := range st.execs {
		if strings.HasPrefix(x.ik, deferredKeyPrefix) {
			runs++
		}
	}
	return fmt.Sprintf("deferred starts: %d submissions (debounce %d, batch %d, throttle %d), %d answered 202, %d attempts, "+
		"%d not answered 2xx (%d of them 429), %d starts committed whose answer was lost; items: debounce %d (%d starts), "+
		"batch %d (%d inputs, %d full), throttle %d; %d items fired, %d runs of their keys",
		subs[KindDebounce]+subs[KindBatch]+subs[KindThrottle], subs[KindDebounce], subs[KindBatch], subs[KindThrottle], answered,
		attempts, lost+throttled, throttled, extra, items[KindDebounce], starts[KindDebounce], items[KindBatch], starts[KindBatch], full,
		items[KindThrottle], fired, runs)
}
