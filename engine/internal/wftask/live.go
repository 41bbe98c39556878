package wftask

import (
	"context"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// Workflow tasks on cached state (see statecache.go).

// Batch is the changes of a batch of workflow tasks, with the cached
// runs its tasks hold: SettleLive caches or stops them once the batch's
// transaction ends.
type Batch struct {
	*runs.Changes
	live []*liveRun
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{Changes: runs.New()} }

// TakeLive takes the cached runs of the claimed tasks out of the cache
// into w, which stops or caches each again once the transaction ends
// (SettleLive): a task with one reads only the events from its position
// (loadHistories). A closed run's is dropped; one ahead of the claimed
// row is stale and stopped.
func (r *Runner) TakeLive(w *Batch, tasks []Claimed) {
	for i := range tasks {
		t := &tasks[i]
		if shardapi.IsTerminal(t.Ex.State) {
			r.live.drop(t.Ex.ID)
			continue
		}
		lr := r.live.take(t.Ex.ID)
		switch {
		case lr == nil:
			r.live.misses.Add(1)
			metrics.StateCacheLookups.WithLabelValues("miss").Inc()
			continue
		case lr.next > t.Ex.NextEventID:
			r.live.stale.Add(1)
			metrics.StateCacheLookups.WithLabelValues("rebuilt").Inc()
			lr.run.Stop()
			continue
		}
		r.live.hits.Add(1)
		metrics.StateCacheLookups.WithLabelValues("hit").Inc()
		lr.keep = false
		t.live = lr
		w.live = append(w.live, lr)
	}
}

// from is the first event id the task reads: the cached run's position,
// or the start of the history.
func (t Claimed) from() int64 {
	if t.live != nil {
		return t.live.pos
	}
	return 0
}

// runLive runs the task's workflow code, for at most WorkflowTaskTimeout:
// on its cached run when it has one, else (or when the cached step fails)
// on a run rebuilt by replaying the whole history. runErr fails the task;
// err (reading the history) fails the transaction.
func (r *Runner) runLive(ctx context.Context, tx *fence.Tx, t Claimed) (res harvest.TaskResult, run *harvest.Run, runErr, err error) {
	taskCtx, cancel := context.WithTimeout(ctx, r.d.TaskTimeout)
	defer cancel()
	log := r.d.Log.With().Str("execution_id", t.Ex.ID.String()).Logger()
	history := t.History
	if lr := t.live; lr != nil {
		if res, runErr = lr.run.Advance(taskCtx, history); runErr == nil {
			return res, lr.run, nil, nil
		}
		r.live.stale.Add(1)
		metrics.StateCacheLookups.WithLabelValues("rebuilt").Inc()
		log.Debug().Err(runErr).Msg("cached workflow state failed its step, replaying")
		head, err := LoadHistory(ctx, tx, t.Ex, 0, int(lr.pos))
		if err != nil {
			return res, nil, nil, err
		}
		history = append(head, history...)
	}
	info := harvest.WorkflowInfo{ExecutionID: t.Ex.ID.String(), WorkflowName: t.Ex.WorkflowName, WorkflowID: t.Ex.WorkflowID}
	run, res, runErr = r.d.Reg.StartRun(taskCtx, harvest.WorkflowTask{Info: info, History: history}, log)
	return res, run, runErr, nil
}

// keepLive holds the run a task ran in w, to be cached if the
// transaction commits: its next task starts at pos, the task's first
// command; next is the run's next event id after the task. A closed run
// is stopped.
func (r *Runner) keepLive(w *Batch, t Claimed, run *harvest.Run, pos int64, closed bool) {
	if closed {
		run.Stop()
		return
	}
	lr := t.live
	if lr == nil {
		lr = &liveRun{id: t.Ex.ID}
		w.live = append(w.live, lr)
	}
	lr.run, lr.pos, lr.next, lr.keep = run, pos, t.Ex.NextEventID, true
}

// SettleLive ends the runs w holds once its transaction ended (err nil:
// committed): a run whose task committed goes back to the cache, every
// other one is stopped (its state may be ahead of the database).
func (r *Runner) SettleLive(w *Batch, err error) {
	for _, lr := range w.live {
		if err == nil && lr.keep && r.d.Owning() {
			r.live.put(lr)
			continue
		}
		lr.run.Stop()
	}
	w.live = nil
}

// cachedQuery answers a query from the run's cached state when the cache
// holds it at the execution's next event id (nothing recorded since its
// last task); ok false: the caller replays.
func (r *Runner) cachedQuery(id uuid.UUID, next int64, name string, args []byte) (out []byte, ok bool, err error) {
	lr := r.live.take(id)
	if lr == nil {
		return nil, false, nil
	}
	defer r.putBack(lr)
	if lr.next != next {
		return nil, false, nil
	}
	r.live.queryHits.Add(1)
	out, err = lr.run.Query(name, args)
	return out, true, err
}

// putBack returns a run a query took to the cache, unless the query
// stopped it.
func (r *Runner) putBack(lr *liveRun) {
	if !lr.run.Stopped() && r.d.Owning() {
		r.live.put(lr)
	}
}

// LoadHistories reads, in one query, the history of every claimed
// running run: from its cached run's position when it has one, else the
// whole of it.
func LoadHistories(ctx context.Context, tx *fence.Tx, tasks []Claimed) error {
	index := make(map[uuid.UUID]int, len(tasks))
	ids := make([]uuid.UUID, 0, len(tasks))
	froms := make([]int64, 0, len(tasks))
	for i, t := range tasks {
		if !shardapi.IsTerminal(t.Ex.State) {
			index[t.Ex.ID] = i
			ids = append(ids, t.Ex.ID)
			froms = append(froms, t.from())
		}
	}
	if len(ids) == 0 {
		return nil
	}
	err := store.LoadHistories(ctx, tx, ids, froms, func(id uuid.UUID, ev harvest.Event) error {
		i := index[id]
		tasks[i].History = append(tasks[i].History, ev)
		return nil
	})
	return wrapLoad(err)
}
