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
func (w *writeSet) exec(ex *execRow) *execUpdate {
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
func (w *writeSet) appendEvents(ex *execRow, cmds []harvest.Command, wake bool) {
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
func (w *writeSet) clearWorkflowTask(ex *execRow) {
	w.exec(ex).clear = true
}

// closeExecution seals ex: state, result, no more tasks, timers or
// pending callbacks.
func (w *writeSet) closeExecution(ex *execRow, state string, output, errInfo json.RawMessage) {
	u := w.exec(ex)
	u.close, u.state, u.output, u.errInfo = true, state, output, errInfo
	u.releaseSlot = state == StateTerminated || state == StateContinuedAsNew
	w.closed = append(w.closed, ex.ID)
	ex.State = state
}

// addActivityTask queues the activity task a command schedules.
func (w *writeSet) addActivityTask(ex *execRow, d harvest.ActivityScheduledData, options string, closeMS *int64) {
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
func (w *writeSet) addTimer(ex *execRow, timerID string, fireAt time.Time) {
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
		b.Queue(`
			INSERT INTO harvest_timers (execution_id, timer_id, fire_at)
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[])`,
			w.timers.ids, w.timers.timerIDs, w.timers.fireAt)
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
		b.Queue(`
			INSERT INTO harvest_events (execution_id, event_id, event_type, data, created_at)
			SELECT id, n, t, d::jsonb, at
			  FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS u(id, n, t, d, at)`,
			w.events.ids, w.events.nums, w.events.types, w.events.data, at)
		return
	}
	b.Queue(`
		INSERT INTO harvest_events (execution_id, event_id, event_type, data, created_at)
		SELECT id, n, t, d::jsonb, now() + $5 * interval '1 microsecond'
		  FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[]) AS u(id, n, t, d)`,
		w.events.ids, w.events.nums, w.events.types, w.events.data, micros(w.ahead))
}

// updateExecutions updates the runs a write set touched. Of the columns
// it sets only state (closes) and wf_task_due_at (wakes and clears of a
// due workflow task) and holds_slot (a released slot) are indexed, so the
// appends of eager workflow tasks, on a page with room (fillfactor 80,
// migration 005), are HOT updates (TestWhichExecutionUpdatesAreHOT).
const updateExecutions = `
		UPDATE harvest_executions x
		   SET next_event_id   = u.next,
		       updated_at      = CASE WHEN u.appended OR u.closes THEN now() ELSE x.updated_at END,
		       state           = coalesce(u.state, x.state),
		       output          = CASE WHEN u.closes THEN u.output::jsonb ELSE x.output END,
		       error           = CASE WHEN u.closes THEN u.err::jsonb ELSE x.error END,
		       completed_at    = CASE WHEN u.closes THEN now() ELSE x.completed_at END,
		       wf_task_due_at  = CASE WHEN u.clear THEN NULL
		                              WHEN u.wake THEN least(coalesce(x.wf_task_due_at, now()), now())
		                              ELSE x.wf_task_due_at END,
		       wf_task_attempt = CASE WHEN u.clear THEN 0 ELSE x.wf_task_attempt END,
		       last_error      = CASE WHEN u.clear THEN NULL ELSE x.last_error END,
		       holds_slot      = x.holds_slot AND NOT u.release,
		       continued_to    = coalesce(nullif(u.cont, '00000000-0000-0000-0000-000000000000'), x.continued_to)
		  FROM unnest($1::uuid[], $2::bigint[], $3::bool[], $4::bool[], $5::bool[], $6::bool[], $7::bool[],
		              $8::text[], $9::text[], $10::text[], $11::uuid[])
		       AS u(id, next, appended, wake, clear, closes, release, state, output, err, cont)
		 WHERE x.execution_id = u.id`

// queueExecutions queues one UPDATE of every execution of the set.
func (w *writeSet) queueExecutions(b *pgx.Batch) {
	if len(w.execs) == 0 {
		return
	}
	n := len(w.execs)
	var (
		ids                           = make([]uuid.UUID, n)
		next                          = make([]int64, n)
		appended, wake, clear, closes = make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
		release                       = make([]bool, n)
		cont                          = make([]uuid.UUID, n)
		states                        = make([]*string, n)
		outputs, errs                 = make([]*string, n), make([]*string, n)
	)
	for i, u := range w.execs {
		ids[i], next[i], appended[i], wake[i], clear[i], closes[i], release[i] =
			u.id, u.next, u.appended, u.wake, u.clear || u.close, u.close, u.releaseSlot
		cont[i] = u.continuedTo
		if u.close {
			states[i], outputs[i], errs[i] = &u.state, jsonText(u.output), jsonText(u.errInfo)
		}
	}
	q := b.Queue(updateExecutions+w.returnOutcomes(),
		ids, next, appended, wake, clear, closes, release, states, outputs, errs, cont)
	if len(w.closed) > 0 {
		q.Query(w.scanOutcomes)
	}
}

// returnOutcomes is the RETURNING clause of the executions' UPDATE when
// the set closes runs: their outcomes as stored (jsonb's text, which is
// what a read would return), so that waiting result polls need no read.
func (w *writeSet) returnOutcomes() string {
	if len(w.closed) == 0 {
		return ""
	}
	return `
		RETURNING u.closes, x.execution_id, x.state, x.output, x.error, x.completed_at, x.continued_to`
}

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
		b.Queue(`DELETE FROM harvest_tasks WHERE execution_id = ANY($1)`, w.closed)
	}
	if !w.newRuns || len(w.timers.ids) > 0 {
		b.Queue(`DELETE FROM harvest_timers WHERE execution_id = ANY($1)`, w.closed)
	}
	if w.newRuns && !w.newRunCallbacks {
		return
	}
	b.Queue(`
		UPDATE harvest_callbacks SET status = 'due', next_attempt_at = now()
		 WHERE execution_id = ANY($1) AND status = 'pending'`, w.closed).
		Exec(func(tag pgconn.CommandTag) error {
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
