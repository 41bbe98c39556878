package runs

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Changes gathers the writes of many locked runs so that a batch
// (workflow tasks, activity completions, signals) sends them as a handful
// of multi-row statements instead of several statements per run: every
// appended event in one INSERT, one UPDATE of all the runs (each run
// once, whatever was done to it), one INSERT each of the activity tasks
// and timers the commands create, and what closing runs clears. The runs
// must be locked by the caller's transaction.
type Changes struct {
	events  eventRows
	updates []*Update
	byID    map[uuid.UUID]*Update
	tasks   activityRows
	timers  timerRows
	// cancels are the timers and activities cancelled (cancel.go).
	cancels cancelRows
	// handOvers are the successors of runs that continued as new (chain.go).
	handOvers handOverRows
	closed    []uuid.UUID
	// Outbox and Children are the rows of commands that act on other
	// runs (the outbox's Router adds them); outboxDue: the changes
	// inserted outbox rows (their own, or their closes'), so the
	// committer wakes the outbox loop.
	Outbox    store.OutboxRows
	Children  store.ChildRows
	outboxDue bool
	// outcomes are the closed runs' outcomes as committed, for the
	// waiters of their results; filled when the statements run.
	outcomes map[uuid.UUID]shardapi.Outcome
	// Direct, when set, has slots for some of the activity tasks: they
	// are inserted claimed and run when the batch commits (tasks.go).
	Direct *Direct
	// callbacksDue: a close made completion callbacks due. Set when the
	// statements run.
	callbacksDue bool
	// woke: an append made a workflow task due.
	woke bool
	// grants are the queued runs a keeper's grant makes RUNNING
	// (grant.go).
	grants []uuid.UUID
	// NewRuns: the changes' runs were created by their own transaction,
	// so the only activity tasks and timers they have are the changes',
	// and the only callbacks those the transaction inserted
	// (NewRunCallbacks says if any): closing them need not look for
	// others.
	NewRuns, NewRunCallbacks bool
	// NewRunsReport: a closed run of the changes' own (NewRuns) is a
	// child (its key is a harvest.ChildStartKey), whose close reports to
	// its parent. A new run has started no child yet, so without such a
	// run closing them inserts no outbox row and the outbox's close
	// statement is skipped.
	NewRunsReport bool
	// Stamps, when set, stamps each run's events with its time instead of
	// the transaction's now(): the time the task that made them saw, when
	// the transaction's own is not known yet (a one-trip start).
	Stamps map[uuid.UUID]time.Time
	// Ahead is the clock's offset of the transaction the changes are
	// written in (fence.Tx.Ahead): events without stamps get now() +
	// Ahead.
	Ahead time.Duration
}

// Update is what the changes do to one run.
type Update struct {
	ID   uuid.UUID
	Next int64 // next_event_id after the changes' appends
	// Appended says events were appended (updated_at moves).
	Appended bool
	// Wake makes a workflow task due now (unless one is due sooner);
	// Clear retires the workflow task that ran. Clear wins.
	Wake, Clear bool
	// Closes seals the run with State, Output and Err.
	Closes      bool
	State       string
	Output      json.RawMessage
	Err         json.RawMessage
	ReleaseSlot bool
	// ContinuedTo is the successor of a run that continued as new.
	ContinuedTo uuid.UUID
}

type eventRows struct {
	ids   []uuid.UUID
	nums  []int64
	types []string
	data  []string
}

func (r *eventRows) add(id uuid.UUID, num int64, typ, data string) {
	r.ids = append(r.ids, id)
	r.nums = append(r.nums, num)
	r.types = append(r.types, typ)
	r.data = append(r.data, data)
}

type timerRows struct {
	ids      []uuid.UUID
	timerIDs []string
	fireAt   []time.Time
}

// New returns empty changes.
func New() *Changes {
	return &Changes{byID: make(map[uuid.UUID]*Update)}
}

// update is ex's update, created on first use.
func (ch *Changes) update(ex *store.Exec) *Update {
	u, ok := ch.byID[ex.ID]
	if !ok {
		u = &Update{ID: ex.ID, Next: ex.NextEventID}
		ch.byID[ex.ID] = u
		ch.updates = append(ch.updates, u)
	}
	return u
}

// AppendEvents appends cmds after ex's last event and advances
// ex.NextEventID; wake makes a workflow task due now, unless ex is QUEUED
// (its first task runs once the flow dispatcher gives it a slot, and
// sees what was appended meanwhile).
func (ch *Changes) AppendEvents(ex *store.Exec, cmds []harvest.Command, wake bool) {
	wake = wake && ex.State != shardapi.StateQueued
	u := ch.update(ex)
	for _, c := range cmds {
		ch.events.add(ex.ID, ex.NextEventID, string(c.Type), string(c.Data))
		ex.NextEventID++
	}
	u.Next = ex.NextEventID
	u.Appended = u.Appended || len(cmds) > 0
	u.Wake = u.Wake || wake
	ch.woke = ch.woke || wake
}

// TakeUpdates removes the changes' run updates and returns them, for a
// caller that writes its runs itself (new runs are inserted as the
// changes left them).
func (ch *Changes) TakeUpdates() []*Update {
	updates := ch.updates
	ch.updates, ch.byID = nil, make(map[uuid.UUID]*Update)
	return updates
}

// ClearWorkflowTask retires the workflow task that ran on ex.
func (ch *Changes) ClearWorkflowTask(ex *store.Exec) {
	ch.update(ex).Clear = true
}

// Close seals ex: state, result, no more tasks, timers or pending
// callbacks.
func (ch *Changes) Close(ex *store.Exec, state string, output, errInfo json.RawMessage) {
	u := ch.update(ex)
	u.Closes, u.State, u.Output, u.Err = true, state, output, errInfo
	u.ReleaseSlot = state == shardapi.StateTerminated || state == shardapi.StateContinuedAsNew
	ch.closed = append(ch.closed, ex.ID)
	ex.State = state
}

// addTimer adds a durable timer of ex.
func (ch *Changes) addTimer(ex *store.Exec, timerID string, fireAt time.Time) {
	ch.timers.ids = append(ch.timers.ids, ex.ID)
	ch.timers.timerIDs = append(ch.timers.timerIDs, timerID)
	ch.timers.fireAt = append(ch.timers.fireAt, fireAt)
}

// AddStarted adds new runs' WorkflowStarted events (event 0, of the types
// and data given), each stamped with its run's time at: one INSERT
// carries them with the events of the runs' first tasks.
func (ch *Changes) AddStarted(ids []uuid.UUID, at []time.Time, types, data []string) {
	for i, id := range ids {
		ch.Stamps[id] = at[i]
		ch.events.add(id, 0, types[i], data[i])
	}
}

// TaskCount is how many activity tasks the changes insert.
func (ch *Changes) TaskCount() int { return len(ch.tasks.ids) }

// Queue queues the changes' statements on b (none when they are empty).
func (ch *Changes) Queue(b *pgx.Batch) {
	ch.queueEvents(b)
	ch.queueUpdates(b)
	ch.queueGrants(b)
	ch.queueHandOvers(b)
	ch.queueActivityTasks(b)
	if len(ch.timers.ids) > 0 {
		store.QueueInsertTimers(b, ch.timers.ids, ch.timers.timerIDs, ch.timers.fireAt)
	}
	ch.queueCancels(b)
	ch.Children.Queue(b)
	ch.Outbox.Queue(b)
	ch.outboxDue = ch.outboxDue || ch.Outbox.Len() > 0
	ch.queueCloses(b)
}

func (ch *Changes) queueEvents(b *pgx.Batch) {
	e := &ch.events
	if len(e.ids) == 0 {
		return
	}
	if ch.Stamps != nil {
		at := make([]time.Time, len(e.ids))
		for i, id := range e.ids {
			at[i] = ch.Stamps[id]
		}
		store.QueueInsertEventsAt(b, e.ids, e.nums, e.types, e.data, at)
		return
	}
	store.QueueInsertEvents(b, e.ids, e.nums, e.types, e.data, ch.Ahead.Microseconds())
}

// queueUpdates queues one UPDATE of every run of the changes.
func (ch *Changes) queueUpdates(b *pgx.Batch) {
	if len(ch.updates) == 0 {
		return
	}
	q := store.QueueUpdateRuns(b, ch.runUpdates(), len(ch.closed) > 0)
	if len(ch.closed) > 0 {
		q.Query(ch.scanOutcomes)
	}
}

// runUpdates are the columns of the changes' UPDATE.
func (ch *Changes) runUpdates() *store.RunUpdates {
	n := len(ch.updates)
	r := &store.RunUpdates{
		IDs: make([]uuid.UUID, n), Next: make([]int64, n),
		Appended: make([]bool, n), Wake: make([]bool, n), Clear: make([]bool, n), Closes: make([]bool, n),
		Release: make([]bool, n), Cont: make([]uuid.UUID, n),
		States: make([]*string, n), Outputs: make([]*string, n), Errs: make([]*string, n),
	}
	for i, u := range ch.updates {
		r.IDs[i], r.Next[i], r.Appended[i], r.Wake[i], r.Clear[i], r.Closes[i], r.Release[i] =
			u.ID, u.Next, u.Appended, u.Wake, u.Clear || u.Closes, u.Closes, u.ReleaseSlot
		r.Cont[i] = u.ContinuedTo
		if u.Closes {
			r.States[i], r.Outputs[i], r.Errs[i] = &u.State, JSONText(u.Output), JSONText(u.Err)
		}
	}
	return r
}

// scanOutcomes reads the closed runs' outcomes the UPDATE returned.
func (ch *Changes) scanOutcomes(rows pgx.Rows) error {
	ch.outcomes = make(map[uuid.UUID]shardapi.Outcome, len(ch.closed))
	for rows.Next() {
		var (
			closes bool
			id     uuid.UUID
			o      shardapi.Outcome
		)
		if err := rows.Scan(&closes, &id, &o.State, &o.Output, &o.Error, &o.CompletedAt, &o.ContinuedTo); err != nil {
			return err
		}
		if closes {
			o.ExecutionID = id
			ch.outcomes[id] = o
		}
	}
	return rows.Err()
}

// queueCloses clears what the closed runs leave behind: activity tasks,
// timers, and pending completion callbacks become due.
func (ch *Changes) queueCloses(b *pgx.Batch) {
	if len(ch.closed) == 0 {
		return
	}
	if !ch.NewRuns || ch.NewRunsReport {
		store.QueueCloseOutbox(b, ch.closed).Exec(func(tag pgconn.CommandTag) error {
			ch.outboxDue = ch.outboxDue || tag.RowsAffected() > 0
			return nil
		})
	}
	if !ch.NewRuns || len(ch.tasks.ids) > 0 {
		store.QueueDeleteRunsTasks(b, ch.closed)
	}
	if !ch.NewRuns || len(ch.timers.ids) > 0 {
		store.QueueDeleteRunsTimers(b, ch.closed)
	}
	if ch.NewRuns && !ch.NewRunCallbacks {
		return
	}
	store.QueueRunsCallbacksDue(b, ch.closed).Exec(func(tag pgconn.CommandTag) error {
		ch.callbacksDue = ch.callbacksDue || tag.RowsAffected() > 0
		return nil
	})
}

// JSONText is b as a nullable text column (nil when empty).
func JSONText(b json.RawMessage) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
