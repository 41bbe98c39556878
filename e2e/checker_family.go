package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Parents with children and external signals (the workload's parents and
// approvers).
//
// Per parent the workload started (checked once it COMPLETED):
//   - exactly Children child runs carry a start key
//     hv:child:<parent>:..., in any shard, with distinct keys, each
//     closed, COMPLETED;
//   - its history has one ChildWorkflowInitiated per child and one
//     SignalReceived keyed hv:childdone:<child> per child (none for a run
//     that is not its child), and its output counts Children × 1;
//
// per approver: the order it names has exactly one SignalReceived keyed
// hv:sig:<approver>:1 when the approver COMPLETED, none when it FAILED
// with an ExternalSignalFailed of type execution_terminal in its history
// (the order had closed), and no other hv:sig key of
// the approver in any run; and the outbox of every shard is empty.

// System start and signal key prefixes of the family commands.
const (
	childKeyPrefix = "hv:child:"
	childDonePref  = "hv:childdone:"
	extSigPrefix   = "hv:sig:"
)

// parentOfKey is the parent execution id a child's start key names (""
// when the key is not a child's).
func parentOfKey(ik string) string {
	rest, ok := strings.CutPrefix(ik, childKeyPrefix)
	if !ok {
		return ""
	}
	parent, _, _ := strings.Cut(rest, ":")
	return parent
}

// readFamily reads the shard's ChildWorkflowInitiated counts, its
// ExternalSignalFailed execution_terminal counts and its outbox rows into
// st.
func (st *DBState) readFamily(ctx context.Context, shard uint16, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT execution_id::text, count(*) FILTER (WHERE event_type = 'ChildWorkflowInitiated'),
		       count(*) FILTER (WHERE event_type = 'ExternalSignalFailed' AND data->'error'->>'type' = 'execution_terminal')
		  FROM harvest_events
		 WHERE event_type IN ('ChildWorkflowInitiated', 'ExternalSignalFailed') GROUP BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var inits, terminal int64
		if err := rows.Scan(&id, &inits, &terminal); err != nil {
			return err
		}
		st.childInits[id] += inits
		st.extTerminal[id] += terminal
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM harvest_outbox`).Scan(&n); err != nil {
		return err
	}
	st.outbox[shard] = n
	return nil
}

// Outbox is how many outbox rows the shards hold.
func (st *DBState) Outbox() int64 {
	var n int64
	for _, c := range st.outbox {
		n += c
	}
	return n
}

// WaitOutbox re-reads the databases until every shard's outbox is empty
// and nothing is open (DBState.Open), or timeout; it returns the last
// state read.
func WaitOutbox(ctx context.Context, dsns map[uint16]string, st *DBState, timeout time.Duration) (*DBState, error) {
	deadline := time.Now().Add(timeout)
	for (st.Outbox() > 0 || st.Open() > 0) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(time.Second):
		}
		next, err := ReadDB(ctx, dsns)
		if err != nil {
			return st, err
		}
		st = next
	}
	return st, nil
}

// childrenOf groups the child runs by the parent their start key names.
func (st *DBState) childrenOf() map[string][]*execRow {
	kids := map[string][]*execRow{}
	for _, x := range st.execs {
		if p := parentOfKey(x.ik); p != "" {
			kids[p] = append(kids[p], x)
		}
	}
	return kids
}

// checkFamily checks the parents, the approvers and the outboxes.
func checkFamily(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	kids := st.childrenOf()
	for _, id := range sortedKeys(familyStarts(ops, wfParent)) {
		checkParent(familyStarts(ops, wfParent)[id], st, kids[id], add)
	}
	approvers := familyStarts(ops, wfApprover)
	for _, id := range sortedKeys(approvers) {
		checkApprover(approvers[id], st, add)
	}
	for _, shard := range sortedShards(st.outbox) {
		if n := st.outbox[shard]; n > 0 {
			add(CheckChildren, "shard %d still has %d outbox rows after the heal", shard, n)
		}
	}
}

// familyStarts are the answered starts of workflow by execution id.
func familyStarts(ops []*Op, workflow string) map[string]*Op {
	starts := map[string]*Op{}
	for _, op := range sortedOps(ops) {
		if op.Kind == KindStart && op.Workflow == workflow && op.OK && starts[op.ExecID] == nil {
			starts[op.ExecID] = op
		}
	}
	return starts
}

// checkParent checks one parent's children and its history.
func checkParent(op *Op, st *DBState, kids []*execRow, add func(check, format string, args ...any)) {
	p := st.execs[op.ExecID]
	if p == nil || p.state != "COMPLETED" {
		return // CheckAckedExists or CheckCompleted reports it
	}
	if len(kids) != op.Children {
		add(CheckChildren, "parent %s (%d children) has %d child runs", p.id, op.Children, len(kids))
	}
	keys := map[string]bool{}
	for _, k := range kids {
		if keys[k.ik] {
			add(CheckChildren, "two child runs of parent %s share start key %q", p.id, k.ik)
		}
		keys[k.ik] = true
		if k.state != "COMPLETED" {
			add(CheckChildren, "child %s of completed parent %s is %s", k.id, p.id, k.state)
		}
		if n := st.signals[[2]string{p.id, childDonePref + k.id}]; n != 1 {
			add(CheckChildren, "parent %s has %d SignalReceived for child %s", p.id, n, k.id)
		}
	}
	checkParentHistory(op, p, st, add)
}

// checkParentHistory: one ChildWorkflowInitiated and one childdone per
// child, and the output counts them.
func checkParentHistory(op *Op, p *execRow, st *DBState, add func(check, format string, args ...any)) {
	if n := st.childInits[p.id]; n != int64(op.Children) {
		add(CheckChildren, "parent %s (%d children) has %d ChildWorkflowInitiated", p.id, op.Children, n)
	}
	done := 0
	for k := range st.signals {
		if k[0] == p.id && strings.HasPrefix(k[1], childDonePref) {
			done++
		}
	}
	if done != op.Children {
		add(CheckChildren, "parent %s (%d children) has %d distinct childdone signal keys", p.id, op.Children, done)
	}
	var out int
	if err := json.Unmarshal([]byte(p.output), &out); err != nil || out != op.Children {
		add(CheckChildren, "parent %s (%d children of one activity) has output %q", p.id, op.Children, p.output)
	}
}

// checkApprover checks the signal an approver sent.
func checkApprover(op *Op, st *DBState, add func(check, format string, args ...any)) {
	a := st.execs[op.ExecID]
	if a == nil {
		return
	}
	key := fmt.Sprintf("%s%s:1", extSigPrefix, a.id)
	var want int64
	switch {
	case a.state == "COMPLETED":
		want = 1
	case st.terminalApprover(a):
		if o := st.execs[op.Target]; o != nil && !terminalStates[o.state] {
			add(CheckExternal, "approver %s failed execution_terminal but order %s is %s", a.id, op.Target, o.state)
		}
	default:
		return // RUNNING or another failure: CheckCompleted reports it
	}
	if n := st.signals[[2]string{op.Target, key}]; n != want {
		add(CheckExternal, "approver %s is %s; order %s has %d SignalReceived keyed %q, want %d", a.id, a.state, op.Target, n, key, want)
	}
	for k, n := range st.signals {
		if strings.HasPrefix(k[1], extSigPrefix+a.id+":") && (k[1] != key || k[0] != op.Target) {
			add(CheckExternal, "approver %s's signal key %q is in run %s (%d times)", a.id, k[1], k[0], n)
		}
	}
}

// terminalApprover reports whether x is an approver that failed because
// its order had closed (a correct outcome): its history records the
// signal's refusal as execution_terminal.
func (st *DBState) terminalApprover(x *execRow) bool {
	return x.name == wfApprover && x.state == "FAILED" && st.extTerminal[x.id] > 0
}

func sortedShards(m map[uint16]int64) []uint16 {
	s := make([]uint16, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// FamilyStats summarizes the parents and approvers for the report's notes.
func FamilyStats(ops []*Op, st *DBState) string {
	parents, approvers := familyStarts(ops, wfParent), familyStarts(ops, wfApprover)
	kids, want := 0, 0
	all := st.childrenOf()
	for id, op := range parents {
		kids += len(all[id])
		want += op.Children
	}
	var ok, terminal int
	for id := range approvers {
		if x := st.execs[id]; x != nil {
			ok += boolInt(x.state == "COMPLETED")
			terminal += boolInt(st.terminalApprover(x))
		}
	}
	return fmt.Sprintf("children (parent_chain): %d parents, %d child runs (%d asked for); approvers (SignalExternal): %d, "+
		"%d delivered, %d found the order closed; outbox rows left %d", len(parents), kids, want, len(approvers), ok, terminal, st.Outbox())
}
