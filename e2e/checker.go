package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Violation is one broken promise found by the checker.
type Violation struct {
	Check  string
	Detail string
}

// Check names (the report groups violations by them).
const (
	CheckStartDedup   = "start key -> one execution"
	CheckSWSDedup     = "sws workflow id -> one execution"
	CheckAckedExists  = "acknowledged op's execution exists"
	CheckAnswersAgree = "answers for one key agree"
	CheckSignalOnce   = "(execution, signal key) -> one SignalReceived"
	CheckHistory      = "history dense, one WorkflowStarted"
	CheckActivity     = "activity scheduled/completed once"
	CheckCompleted    = "every started workflow completes"
	CheckCancelAnswer = "cancel answered 200 RUNNING or 409 terminal"
	CheckCancelOnce   = "cancel -> one WorkflowCancelRequested"
	CheckCancelCloses = "cancelled run ends CANCELLED, refunds once"
	CheckPhantom      = "no execution without a request"
	CheckAnswered     = "every op answered after the heal"
	CheckRefusal      = "no unexpected 4xx"
	CheckChainLinks   = "continue-as-new: one run per chain link"
	CheckChainSignals = "chain signal key -> delivered once in the chain"
	CheckChainEnd     = "chain completes with every add"
	CheckChildren     = "child command -> one child run, one childdone"
	CheckExternal     = "external signal -> delivered once"
)

// AllChecks lists the checks in report order.
var AllChecks = []string{CheckStartDedup, CheckSWSDedup, CheckAckedExists, CheckAnswersAgree, CheckSignalOnce,
	CheckHistory, CheckActivity, CheckCompleted, CheckCancelAnswer, CheckCancelOnce, CheckCancelCloses, CheckPhantom,
	CheckAnswered, CheckRefusal, CheckChainLinks, CheckChainSignals, CheckChainEnd, CheckChildren, CheckExternal, CheckScheduleOnce, CheckScheduleGap,
	CheckDeferredFired, CheckDeferredOnce, CheckDeferredInput, CheckThrottlePace, CheckWebhookOnce, CheckWebhookSWS,
	CheckFlowLimit, CheckActivityFlowLimit, CheckClusterFlowLimit, CheckUpdateOnce, CheckBatchOnce, CheckResetOnce}

// execRow is one execution as the checker reads it.
type execRow struct {
	shard                     uint16
	id, name, wfID, state, ik string
	nextEventID               int64
	lastError                 string
	events, minEv, maxEv      int64
	started                   int64
	// Continue-as-new: the chain's first run (empty on a first run), the
	// run this one continued from and to, and the output (JSON, "" if none).
	chainID, continuedFrom, continuedTo, output string
	// waiting is what an open run waits on (readWaiting).
	waiting string
	// resetFrom is the run a reset run replays ("" for any other run).
	resetFrom string
}

// DBState is what the checker reads from the shard databases.
type DBState struct {
	execs   map[string]*execRow         // execution id ->
	signals map[[2]string]int64         // (execution, key) -> SignalReceived events
	acts    map[[2]string][2]int64      // (execution, activity id) -> scheduled, completed
	actKeys map[string]int64            // activity idempotency key -> ActivityScheduled events
	shards  map[uint16]map[string]int64 // shard -> execution states -> count
	cancels map[string]*cancelRow       // execution id -> its cancel requests (executions that have one)
	// Children and external signals: ChildWorkflowInitiated events per
	// execution, and outbox rows per shard.
	childInits  map[string]int64
	extTerminal map[string]int64 // ExternalSignalFailed execution_terminal events per execution
	outbox      map[uint16]int64
	fires       []*fireRow // the schedules' recorded fires (checker_schedule.go)
	// The deferred items, and the inputs of the runs of a deferred or a
	// webhook key (checker_deferred.go, checker_webhook.go).
	deferred  []*deferredRow
	runInputs map[string]string
	slots     []*slotRow // the limited runs' slots (checker_flow.go)
	// activitySlots are the slots the reports' activity attempts held.
	activitySlots []*slotRow
	// updates counts the UpdateCompleted events per (execution, update
	// id) (checker_cart.go).
	updates map[[2]string]int64
	// actKeyOf is the idempotency key of each (execution, activity id).
	actKeyOf map[[2]string]string
}

// ReadDB reads every shard database.
func ReadDB(ctx context.Context, dsns map[uint16]string) (*DBState, error) {
	st := &DBState{execs: map[string]*execRow{}, signals: map[[2]string]int64{}, acts: map[[2]string][2]int64{},
		actKeys: map[string]int64{}, shards: map[uint16]map[string]int64{}, cancels: map[string]*cancelRow{},
		childInits: map[string]int64{}, extTerminal: map[string]int64{}, outbox: map[uint16]int64{}, runInputs: map[string]string{},
		updates: map[[2]string]int64{}, actKeyOf: map[[2]string]string{}}
	for shard, dsn := range dsns {
		if err := st.readShard(ctx, shard, dsn); err != nil {
			return nil, fmt.Errorf("shard %d: %w", shard, err)
		}
	}
	return st, nil
}

func (st *DBState) readShard(ctx context.Context, shard uint16, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	st.shards[shard] = map[string]int64{}
	rows, err := conn.Query(ctx, `
		SELECT x.execution_id::text, x.workflow_name, x.workflow_id, x.state, coalesce(x.idempotency_key, ''),
		       x.next_event_id, coalesce(x.last_error, ''),
		       count(e.event_id), coalesce(min(e.event_id), -1), coalesce(max(e.event_id), -1),
		       count(*) FILTER (WHERE e.event_type = 'WorkflowStarted'),
		       coalesce(x.chain_id::text, ''), coalesce(x.continued_from::text, ''), coalesce(x.continued_to::text, ''),
		       coalesce(x.output::text, ''),
		       coalesce((SELECT s.data->>'reset_from' FROM harvest_events s WHERE s.execution_id = x.execution_id AND s.event_id = 0), '')
		  FROM harvest_executions x LEFT JOIN harvest_events e USING (execution_id)
		 GROUP BY x.execution_id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		r := &execRow{shard: shard}
		if err := rows.Scan(&r.id, &r.name, &r.wfID, &r.state, &r.ik, &r.nextEventID, &r.lastError,
			&r.events, &r.minEv, &r.maxEv, &r.started, &r.chainID, &r.continuedFrom, &r.continuedTo, &r.output, &r.resetFrom); err != nil {
			return err
		}
		if prev, dup := st.execs[r.id]; dup {
			return fmt.Errorf("execution %s is in shards %d and %d", r.id, prev.shard, shard)
		}
		st.execs[r.id] = r
		st.shards[shard][r.state]++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = conn.Query(ctx, `
		SELECT execution_id::text, data->>'idempotency_key', count(*)
		  FROM harvest_events
		 WHERE event_type = 'SignalReceived' AND coalesce(data->>'idempotency_key', '') <> ''
		 GROUP BY 1, 2`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, key string
		var n int64
		if err := rows.Scan(&id, &key, &n); err != nil {
			return err
		}
		st.signals[[2]string{id, key}] += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = conn.Query(ctx, `
		SELECT execution_id::text, data->>'activity_id', coalesce(max(data->>'idempotency_key'), ''),
		       count(*) FILTER (WHERE event_type = 'ActivityScheduled'),
		       count(*) FILTER (WHERE event_type IN ('ActivityCompleted', 'ActivityFailed', 'ActivityTimedOut'))
		  FROM harvest_events
		 WHERE event_type LIKE 'Activity%'
		 GROUP BY 1, 2`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, act, key string
		var sched, done int64
		if err := rows.Scan(&id, &act, &key, &sched, &done); err != nil {
			return err
		}
		st.acts[[2]string{id, act}] = [2]int64{sched, done}
		if key == "" {
			continue
		}
		st.actKeyOf[[2]string{id, act}] = key
		if x := st.execs[id]; x == nil || x.resetFrom == "" {
			st.actKeys[key] += sched // a reset run's keys are its source's: checkResets
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := st.readFamily(ctx, shard, conn); err != nil {
		return err
	}
	if err := st.readFires(ctx, shard, conn); err != nil {
		return err
	}
	if err := st.readDeferred(ctx, shard, conn); err != nil {
		return err
	}
	if err := st.readSlots(ctx, shard, conn); err != nil {
		return err
	}
	if err := st.readActivitySlots(ctx, shard, conn); err != nil {
		return err
	}
	if err := st.readUpdates(ctx, conn); err != nil {
		return err
	}
	if err := st.readWaiting(ctx, conn); err != nil {
		return err
	}
	return st.readCancels(ctx, conn)
}

// Executions is how many executions the databases hold.
func (st *DBState) Executions() int { return len(st.execs) }

// Open is how many executions are not closed yet (running or queued;
// a keeper never closes: checkKeepers checks it),
// and deferred items not started yet (pending or firing). A request
// whose answer a fault lost may still commit after the heal (a node cut
// off from the database while it waited sends its statements again when
// TCP retransmits them, which can be seconds after the heal, and its
// lease outlives a short fault): its item is then pending for a while,
// as a late start's run is running.
func (st *DBState) Open() int {
	n := 0
	for _, x := range st.execs {
		if (x.state == "RUNNING" || x.state == "QUEUED") && x.name != wfKeeper {
			n++
		}
	}
	for _, d := range st.deferred {
		if d.state == "pending" || d.state == "firing" {
			n++
		}
	}
	return n
}

// Check verifies the history against the databases. It expects the faults
// healed, the parked operations re-delivered and the workflows given time
// to complete.
func Check(ops []*Op, st *DBState) []Violation {
	var vs []Violation
	add := func(check, format string, args ...any) {
		vs = append(vs, Violation{check, fmt.Sprintf(format, args...)})
	}

	// Requests: every key the workload ever sent, answered or not.
	startKeys := map[[2]string]bool{}
	swsIDs := map[[2]string]bool{}
	for _, op := range ops {
		switch op.Kind {
		case KindStart:
			startKeys[[2]string{op.Workflow, op.Key}] = true
		case KindSWS:
			swsIDs[[2]string{op.Workflow, op.WorkflowID}] = true
		case KindUWS:
			startKeys[[2]string{op.Workflow, uwsKeyPrefix + op.Key}] = true
		case KindBatchJob:
			startKeys[[2]string{wfBatch, op.Key}] = true
		}
	}

	// Executions per start key and per sws workflow id, and phantoms.
	byKey := map[[2]string][]string{}
	bySWS := map[[2]string][]string{}
	for _, x := range st.execs {
		switch {
		case parentOfKey(x.ik) != "":
			// A child: its parent started it (checkFamily counts them).
			if st.execs[parentOfKey(x.ik)] == nil {
				add(CheckPhantom, "child %s (%s) has start key %q of a parent no shard holds", x.id, x.name, x.ik)
			}
		case strings.HasPrefix(x.ik, schedKeyPrefix):
			// A schedule's fire: checkSchedules counts them.
		case strings.HasPrefix(x.ik, deferredKeyPrefix):
			// A deferred item's fire: checkDeferred counts them.
		case strings.HasPrefix(x.ik, webhookKeyPrefix):
			// A webhook delivery: checkWebhooks counts them.
		case x.name == wfKeeper:
			// A keeper of a limit counted across the cluster: checkKeepers.
		case x.name == wfCounter && x.ik == "" && strings.HasPrefix(x.wfID, webhookCounterPrefix):
			// A counter webhook deliveries feed: checkWebhooks counts them.
		case x.ik != "":
			k := [2]string{x.name, x.ik}
			byKey[k] = append(byKey[k], x.id)
			if !startKeys[k] {
				add(CheckPhantom, "execution %s (%s) has start key %q that no client sent", x.id, x.name, x.ik)
			}
		case x.chainID != "":
			// A later run of a continue-as-new chain: checkChains
			// follows it from the chain's first run.
		case swsIDs[[2]string{x.name, x.wfID}]:
			k := [2]string{x.name, x.wfID}
			bySWS[k] = append(bySWS[k], x.id)
		default:
			add(CheckPhantom, "execution %s (%s/%s) matches no client request", x.id, x.name, x.wfID)
		}
	}
	for _, k := range sortedKeys(byKey) {
		if ids := byKey[k]; len(ids) > 1 {
			sort.Strings(ids)
			add(CheckStartDedup, "%s key %q has %d executions: %s", k[0], k[1], len(ids), strings.Join(ids, ", "))
		}
	}
	for _, k := range sortedKeys(bySWS) {
		if ids := bySWS[k]; len(ids) > 1 {
			sort.Strings(ids)
			add(CheckSWSDedup, "%s workflow id %q has %d executions: %s", k[0], k[1], len(ids), strings.Join(ids, ", "))
		}
	}

	// Answers: every acknowledged op names an existing execution of its
	// key, and all answers for one key name the same one; at most one
	// answer says it did the thing first.
	answers := map[string]string{}   // op identity -> execution id
	firsts := map[string]int{}       // op identity -> answers claiming the first effect
	unanswered := map[string]*Op{}   // op identity -> last unanswered op
	answeredIDs := map[string]bool{} // op identities answered at least once
	signalSeen := map[[2]string]bool{}
	for _, op := range sortedOps(ops) {
		ident := op.Kind + " " + op.Workflow + " " + op.Key + " " + op.WorkflowID + " " + op.Target
		// The request an op re-sends: a counter add is one request whichever
		// run id of its chain it went to (a re-delivery goes to the other).
		req := ident
		if op.Chain != "" {
			req = op.Kind + " " + op.Workflow + " " + op.Key + " chain " + op.Chain
		}
		if op.Kind == KindCancel || isScheduleOp(op) || isDeferredOp(op) || isWebhookOp(op) {
			// checkCancels, checkSchedules, checkDeferred and
			// checkWebhooks check what the answers did; here only
			// whether one came.
			if op.Answered() || op.Status/100 == 4 && op.Status != 429 {
				answeredIDs[req] = true
				if op.Kind != KindCancel && !op.Answered() {
					add(CheckRefusal, "op %d %s %q answered %d: %s", op.ID, op.Kind, op.Key, op.Status, op.Err)
				}
			} else {
				unanswered[req] = op
			}
			continue
		}
		if !op.OK {
			if op.Status/100 == 4 && op.Status != 429 {
				add(CheckRefusal, "op %d %s %q answered %d: %s", op.ID, op.Kind, op.Key, op.Status, op.Err)
				answeredIDs[req] = true
				continue
			}
			unanswered[req] = op
			continue
		}
		answeredIDs[req] = true
		if prev, ok := answers[ident]; ok && prev != op.ExecID {
			add(CheckAnswersAgree, "%s %q answered %s and %s", op.Kind, op.Key, prev, op.ExecID)
		}
		answers[ident] = op.ExecID
		if (op.Kind == KindStart && op.Fresh != nil && *op.Fresh) || (op.Kind != KindStart && op.Delivered != nil && *op.Delivered) {
			firsts[ident]++
			if firsts[ident] == 2 {
				add(CheckAnswersAgree, "%s %q was answered as the first effect more than once", op.Kind, op.Key)
			}
		}
		x := st.execs[op.ExecID]
		if x == nil {
			add(CheckAckedExists, "op %d %s %q answered %d with execution %s, which no shard holds", op.ID, op.Kind, op.Key, op.Status, op.ExecID)
			continue
		}
		if shard := shardOf(op.ExecID); shard != x.shard {
			add(CheckAckedExists, "execution %s is in shard %d, its id says %d", op.ExecID, x.shard, shard)
		}
		switch op.Kind {
		case KindStart:
			if x.name != op.Workflow || x.ik != op.Key {
				add(CheckAckedExists, "start %q answered %s, which is %s with key %q", op.Key, op.ExecID, x.name, x.ik)
			}
		case KindSWS:
			if x.name != op.Workflow || x.wfID != op.WorkflowID {
				add(CheckAckedExists, "sws %q answered %s, which is %s/%s", op.WorkflowID, op.ExecID, x.name, x.wfID)
			}
		case KindBatchJob:
			if x.name != wfBatch || x.ik != op.Key {
				add(CheckAckedExists, "batch job %q answered %s, which is %s with key %q", op.Key, op.ExecID, x.name, x.ik)
			}
		case KindUWS:
			if x.name != op.Workflow || x.wfID != op.WorkflowID || x.ik != uwsKeyPrefix+op.Key {
				add(CheckAckedExists, "update-with-start %q answered %s, which is %s/%s with key %q", op.Key, op.ExecID, x.name, x.wfID, x.ik)
			}
		case KindSignal, KindUpdate:
			if op.ExecID != op.Target {
				add(CheckAckedExists, "%s %q to %s answered for %s", op.Kind, op.Key, op.Target, op.ExecID)
			}
		}
		// A counter add reaches the chain's current run, and an unconsumed
		// one is carried to the next: checkChains counts it per chain.
		// An update's signal key is its id's (checkCarts counts it).
		// A signal to a run a reset replaced reaches the reset run, which
		// an answer may not name (a retry that found the key delivered):
		// the first run of the target's line that holds the key.
		reached := op.ExecID
		if op.Kind == KindSignal {
			reached = st.signalRun(op.ExecID, op.Key)
		}
		if sk := [2]string{reached, op.Key}; op.Kind != KindStart && op.Kind != KindBatchJob && op.Kind != KindReset && !isUpdateOp(op) && op.Chain == "" && !signalSeen[sk] {
			signalSeen[sk] = true
			if n := st.signals[sk]; n != 1 {
				add(CheckSignalOnce, "acknowledged signal %q to %s has %d SignalReceived events", op.Key, reached, n)
			}
		}
	}
	for req, op := range unanswered {
		if !answeredIDs[req] {
			add(CheckAnswered, "op %d %s %q was never answered: %s", op.ID, op.Kind, op.Key, op.Err)
		}
	}
	for _, k := range sortedKeys(st.signals) {
		if n := st.signals[k]; n > 1 {
			add(CheckSignalOnce, "execution %s has %d SignalReceived events with key %q", k[0], n, k[1])
		}
	}

	checkCancels(ops, st, add)
	checkChains(ops, st, add)
	checkFamily(ops, st, add)
	checkSchedules(ops, st, add)
	checkDeferred(ops, st, add)
	checkWebhooks(ops, st, add)
	checkFlow(st, add)
	checkCarts(ops, st, add)
	checkBatches(ops, st, add)
	checkResets(ops, st, add)

	// Histories and activities. A run closes COMPLETED, or CANCELLED when
	// it was asked to (checkCancels decides whether that close was right).
	for _, id := range sortedKeys(st.execs) {
		x := st.execs[id]
		if x.events == 0 || x.minEv != 0 || x.maxEv != x.events-1 || x.nextEventID != x.events || x.started != 1 {
			add(CheckHistory, "execution %s: %d events, ids %d..%d, next_event_id %d, %d WorkflowStarted",
				id, x.events, x.minEv, x.maxEv, x.nextEventID, x.started)
		}
		// A run asked to cancel is reported here only while open: how it
		// closed is CheckCancelCloses's.
		// A run that continued as new is closed: checkChains checks the link.
		handedOver := x.state == "CONTINUED_AS_NEW" && x.continuedTo != "" || st.replacedByReset(x)
		if x.name == wfKeeper {
			continue // a keeper never completes: checkKeepers
		}
		// An approver whose order had closed fails execution_terminal.
		if x.state == "RUNNING" || x.state == "QUEUED" || st.cancels[id] == nil && x.state != "COMPLETED" && !handedOver && !st.terminalApprover(x) {
			msg := ""
			if x.lastError != "" {
				msg = ": " + x.lastError
			}
			if x.waiting != "" {
				msg += " (" + x.waiting + ")"
			}
			add(CheckCompleted, "execution %s (%s/%s) is %s%s", id, x.name, x.wfID, x.state, msg)
		}
	}
	for _, k := range sortedKeys(st.acts) {
		if c := st.acts[k]; c[0] != 1 || c[1] > 1 {
			add(CheckActivity, "execution %s activity %s: %d scheduled, %d closed", k[0], k[1], c[0], c[1])
		}
	}
	for _, k := range sortedKeys(st.actKeys) {
		if n := st.actKeys[k]; n > 1 {
			add(CheckActivity, "activity idempotency key %s scheduled %d times", k, n)
		}
	}
	return vs
}

// shardOf reads the shard from an execution id's first two bytes.
func shardOf(id string) uint16 {
	var v uint16
	if len(id) < 4 {
		return 0xFFFF
	}
	if _, err := fmt.Sscanf(id[:4], "%04x", &v); err != nil {
		return 0xFFFF
	}
	return v
}

func sortedOps(ops []*Op) []*Op {
	s := append([]*Op(nil), ops...)
	sort.Slice(s, func(i, j int) bool { return s[i].ID < s[j].ID })
	return s
}

type ordered interface {
	~string | ~[2]string
}

func sortedKeys[K ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	return keys
}

func less[K ordered](a, b K) bool {
	switch x := any(a).(type) {
	case string:
		return x < any(b).(string)
	case [2]string:
		y := any(b).([2]string)
		return x[0] < y[0] || x[0] == y[0] && x[1] < y[1]
	}
	return false
}

// fingerprint sums up what a read found: the executions and their
// events, the deferred items by state, the outbox rows.
func (st *DBState) fingerprint() string {
	var events int64
	for _, x := range st.execs {
		events += x.nextEventID
	}
	states := map[string]int{}
	for _, d := range st.deferred {
		states[d.state]++
	}
	return fmt.Sprint(len(st.execs), events, states, st.Outbox())
}

// stuckAfter ends WaitQuiet when no execution closed for this long.
const stuckAfter = 45 * time.Second

// WaitQuiet polls the databases until nothing is open (DBState.Open) in
// two reads in a row that found the same (DBState.fingerprint), or
// timeout; it returns the last state read and how long it took. The
// shards are read one after the other, so one read alone may be torn: a
// late request's deferred item read fired on its shard, its run not yet
// there on the shard read before it.
func WaitQuiet(ctx context.Context, dsns map[uint16]string, timeout time.Duration) (*DBState, time.Duration, error) {
	t0 := time.Now()
	deadline := t0.Add(timeout)
	lastOpen, progress, lastPrint := -1, t0, ""
	for {
		st, err := ReadDB(ctx, dsns)
		if err == nil && st.Open() != lastOpen {
			lastOpen, progress = st.Open(), time.Now()
		}
		fp := ""
		if err == nil {
			fp = st.fingerprint()
		}
		// Give up early when nothing closed for a while: what is left is
		// stuck, and the checker reports it.
		quiet := err == nil && st.Open() == 0 && fp == lastPrint
		if quiet || err == nil && time.Since(progress) > stuckAfter || time.Now().After(deadline) {
			return st, time.Since(t0), err
		}
		lastPrint = fp
		select {
		case <-ctx.Done():
			return st, time.Since(t0), ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
