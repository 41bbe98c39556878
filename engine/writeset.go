package engine

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// writeSet gathers the writes of many locked executions so that a batch
// (workflow tasks, activity completions, signals) sends them as a handful
// of multi-row statements instead of several statements per execution:
// every appended event in one INSERT, one UPDATE of all the executions
// (each execution once, whatever was done to it), one INSERT each of the
// activity tasks and timers the commands create, and what closing runs
// clears. The executions must be locked by the caller's transaction.
type writeSet struct {
	events eventRows
	execs  []*execUpdate
	byID   map[uuid.UUID]*execUpdate
	tasks  activityRows
	timers timerRows
	// cancels are the timers and activities cancelled (activity_cancel.go).
	cancels cancelRows
	// handOvers are the successors of runs that continued as new (chain.go).
	handOvers handOverRows
	closed    []uuid.UUID
	// outbox and children are the rows of commands that act on other
	// runs (outbox.go); outboxDue: the set inserted outbox rows (its own,
	// or its closes'), so the committer wakes the outbox loop.
	outbox    store.OutboxRows
	children  store.ChildRows
	outboxDue bool
	// outcomes are the closed runs' outcomes as committed, for the
	// waiters of their results (closeWatch.fireWith); filled when the
	// set's statements run.
	outcomes map[uuid.UUID]Outcome
	// direct, when set, has slots for some of tasks: they are inserted
	// claimed and run when the batch commits (see dispatch.go).
	direct *dispatch
	// callbacksDue: a close made completion callbacks due; the committer
	// wakes the callback loop (wakeCallbacks). Set when the statements run.
	callbacksDue bool
	// newRuns: the set's runs were created by its own transaction, so the
	// only activity tasks and timers they have are the set's, and the only
	// callbacks those the transaction inserted (newRunCallbacks says if
	// any): closing them need not look for others.
	newRuns, newRunCallbacks bool
	// newRunsReport: a closed run of the set's own (newRuns) is a child
	// (its key is a harvest.ChildStartKey), whose close reports to its
	// parent. A new run has started no child yet, so without such a run
	// closing them inserts no outbox row and closeOutbox is skipped.
	newRunsReport bool
	// stamps, when set, stamps each run's events with its time instead of
	// the transaction's now(): the time the task that made them saw, when
	// the transaction's own is not known yet (one_trip.go).
	stamps map[uuid.UUID]time.Time
	// live are the cached runs the set's tasks hold (live_task.go).
	live []*liveRun
	// ahead is the clock's offset of the transaction the set is written
	// in (fence.Tx.Ahead): events without stamps get now() + ahead.
	ahead time.Duration
}

// execUpdate is what the batch does to one execution.
type execUpdate struct {
	id   uuid.UUID
	next int64 // next_event_id after the batch's appends
	// appended says events were appended (updated_at moves).
	appended bool
	// wake makes a workflow task due now (unless one is due sooner);
	// clear retires the workflow task that ran. clear wins.
	wake, clear bool
	// close seals the run with state, output and error.
	close       bool
	state       string
	output      json.RawMessage
	errInfo     json.RawMessage
	releaseSlot bool
	// continuedTo is the successor of a run that continued as new.
	continuedTo uuid.UUID
}

type eventRows struct {
	ids   []uuid.UUID
	nums  []int64
	types []string
	data  []string
}

type activityRows struct {
	ids                                    []uuid.UUID
	wfNames, wfIDs                         []string
	activityIDs, names, queues, keys, opts []string
	inputs                                 []*string
	closeMS                                []*int64
	// options are opts as values, for the tasks dispatched directly.
	options []harvest.ActivityOptions
}

type timerRows struct {
	ids      []uuid.UUID
	timerIDs []string
	fireAt   []time.Time
}

func newWriteSet() *writeSet {
	return &writeSet{byID: make(map[uuid.UUID]*execUpdate)}
}

// exec is ex's update, created on first use.
func (w *writeSet) exec(ex *store.Exec) *execUpdate {
	u, ok := w.byID[ex.ID]
	if !ok {
		u = &execUpdate{id: ex.ID, next: ex.NextEventID}
		w.byID[ex.ID] = u
		w.execs = append(w.execs, u)
	}
	return u
}

// appendEvents appends cmds after ex's last event and advances
// ex.NextEventID; wake makes a workflow task due now.
func (w *writeSet) appendEvents(ex *store.Exec, cmds []harvest.Command, wake bool) {
	u := w.exec(ex)
	for _, c := range cmds {
		w.events.ids = append(w.events.ids, ex.ID)
		w.events.nums = append(w.events.nums, ex.NextEventID)
		w.events.types = append(w.events.types, string(c.Type))
		w.events.data = append(w.events.data, string(c.Data))
		ex.NextEventID++
	}
	u.next = ex.NextEventID
	u.appended = u.appended || len(cmds) > 0
	u.wake = u.wake || wake
}

// takeExecs removes the set's execution updates and returns them, for a
// caller that writes its executions itself (new runs are inserted as the
// set left them).
func (w *writeSet) takeExecs() []*execUpdate {
	execs := w.execs
	w.execs, w.byID = nil, make(map[uuid.UUID]*execUpdate)
	return execs
}

// clearWorkflowTask retires the workflow task that ran on ex.
func (w *writeSet) clearWorkflowTask(ex *store.Exec) {
	w.exec(ex).clear = true
}

// closeExecution seals ex: state, result, no more tasks, timers or
// pending callbacks.
func (w *writeSet) closeExecution(ex *store.Exec, state string, output, errInfo json.RawMessage) {
	u := w.exec(ex)
	u.close, u.state, u.output, u.errInfo = true, state, output, errInfo
	u.releaseSlot = state == StateTerminated || state == StateContinuedAsNew
	w.closed = append(w.closed, ex.ID)
	ex.State = state
}

// addActivityTask queues the activity task a command schedules.
func (w *writeSet) addActivityTask(ex *store.Exec, d harvest.ActivityScheduledData, options string, closeMS *int64) {
	t := &w.tasks
	t.ids = append(t.ids, ex.ID)
	t.wfNames, t.wfIDs = append(t.wfNames, ex.WorkflowName), append(t.wfIDs, ex.WorkflowID)
	t.activityIDs = append(t.activityIDs, d.ActivityID)
	t.names = append(t.names, d.Name)
	t.queues = append(t.queues, d.Queue)
	t.inputs = append(t.inputs, jsonText(inputOrNull(d.Input)))
	t.keys = append(t.keys, d.IdempotencyKey)
	t.opts, t.options = append(t.opts, options), append(t.options, d.Options)
	t.closeMS = append(t.closeMS, closeMS)
}

// addTimer queues a durable timer of ex.
func (w *writeSet) addTimer(ex *store.Exec, timerID string, fireAt time.Time) {
	w.timers.ids = append(w.timers.ids, ex.ID)
	w.timers.timerIDs = append(w.timers.timerIDs, timerID)
	w.timers.fireAt = append(w.timers.fireAt, fireAt)
}

// queue queues the set's statements on b (none when it is empty).
func (w *writeSet) queue(b *pgx.Batch) {
	w.queueEvents(b)
	w.queueExecutions(b)
	w.queueHandOvers(b)
	w.queueActivityTasks(b)
	if len(w.timers.ids) > 0 {
		store.QueueInsertTimers(b, w.timers.ids, w.timers.timerIDs, w.timers.fireAt)
	}
	w.queueCancels(b)
	w.children.Queue(b)
	w.outbox.Queue(b)
	w.outboxDue = w.outboxDue || w.outbox.Len() > 0
	w.queueCloses(b)
}

func (w *writeSet) queueEvents(b *pgx.Batch) {
	if len(w.events.ids) == 0 {
		return
	}
	if w.stamps != nil {
		at := make([]time.Time, len(w.events.ids))
		for i, id := range w.events.ids {
			at[i] = w.stamps[id]
		}
		store.QueueInsertEventsAt(b, w.events.ids, w.events.nums, w.events.types, w.events.data, at)
		return
	}
	store.QueueInsertEvents(b, w.events.ids, w.events.nums, w.events.types, w.events.data, micros(w.ahead))
}

// queueExecutions queues one UPDATE of every execution of the set.
func (w *writeSet) queueExecutions(b *pgx.Batch) {
	if len(w.execs) == 0 {
		return
	}
	q := store.QueueUpdateRuns(b, w.runUpdates(), len(w.closed) > 0)
	if len(w.closed) > 0 {
		q.Query(w.scanOutcomes)
	}
}

// runUpdates are the columns of the set's executions' UPDATE.
func (w *writeSet) runUpdates() *store.RunUpdates {
	n := len(w.execs)
	r := &store.RunUpdates{
		IDs: make([]uuid.UUID, n), Next: make([]int64, n),
		Appended: make([]bool, n), Wake: make([]bool, n), Clear: make([]bool, n), Closes: make([]bool, n),
		Release: make([]bool, n), Cont: make([]uuid.UUID, n),
		States: make([]*string, n), Outputs: make([]*string, n), Errs: make([]*string, n),
	}
	for i, u := range w.execs {
		r.IDs[i], r.Next[i], r.Appended[i], r.Wake[i], r.Clear[i], r.Closes[i], r.Release[i] =
			u.id, u.next, u.appended, u.wake, u.clear || u.close, u.close, u.releaseSlot
		r.Cont[i] = u.continuedTo
		if u.close {
			r.States[i], r.Outputs[i], r.Errs[i] = &u.state, jsonText(u.output), jsonText(u.errInfo)
		}
	}
	return r
}

// scanOutcomes reads the closed runs' outcomes the UPDATE returned.
func (w *writeSet) scanOutcomes(rows pgx.Rows) error {
	w.outcomes = make(map[uuid.UUID]Outcome, len(w.closed))
	for rows.Next() {
		var (
			closes bool
			id     uuid.UUID
			o      Outcome
		)
		if err := rows.Scan(&closes, &id, &o.State, &o.Output, &o.Error, &o.CompletedAt, &o.ContinuedTo); err != nil {
			return err
		}
		if closes {
			o.ExecutionID = id
			w.outcomes[id] = o
		}
	}
	return rows.Err()
}

func (w *writeSet) queueActivityTasks(b *pgx.Batch) {
	t := &w.tasks
	if len(t.ids) == 0 {
		return
	}
	w.queueTaskInsert(b, w.direct)
}

// queueCloses clears what the closed runs leave behind: activity tasks,
// timers, and pending completion callbacks become due.
func (w *writeSet) queueCloses(b *pgx.Batch) {
	if len(w.closed) == 0 {
		return
	}
	if !w.newRuns || w.newRunsReport {
		store.QueueCloseOutbox(b, w.closed).Exec(func(tag pgconn.CommandTag) error {
			w.outboxDue = w.outboxDue || tag.RowsAffected() > 0
			return nil
		})
	}
	if !w.newRuns || len(w.tasks.ids) > 0 {
		store.QueueDeleteRunsTasks(b, w.closed)
	}
	if !w.newRuns || len(w.timers.ids) > 0 {
		store.QueueDeleteRunsTimers(b, w.closed)
	}
	if w.newRuns && !w.newRunCallbacks {
		return
	}
	store.QueueRunsCallbacksDue(b, w.closed).Exec(func(tag pgconn.CommandTag) error {
		w.callbacksDue = w.callbacksDue || tag.RowsAffected() > 0
		return nil
	})
}

func jsonText(b json.RawMessage) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
