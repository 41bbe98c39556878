package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Schedules: the schedule part of the workload.
//
// While the load runs, the workload creates Schedules interval schedules,
// one every ScheduleEvery, each firing the demo noop_chain (one activity)
// every 1 or 2 seconds under an overlap policy taken in turn (skip,
// allow_all, buffer_one), and pauses each after ScheduleLife (a pause cut
// short by the end of the load, or unanswered, is re-sent after the heal).
// A create retried after its answer was lost finds the schedule and is
// answered 409 conflict, which counts as its answer. The checker
// (checker_schedule.go) counts the runs per nominal time.

// Operation kinds of the schedule part.
const (
	KindSchedule      = "schedule"       // create an interval schedule (its id is the op's key)
	KindSchedulePause = "schedule_pause" // pause it
)

// Overlap policies the workload's schedules take in turn.
var scheduleOverlaps = []string{"skip", "allow_all", "buffer_one"}

// scheduleChain creates schedule n and pauses it after life.
func scheduleChain(n int64, life time.Duration) chain {
	id := fmt.Sprintf("sch-%d", n)
	create := &Op{Kind: KindSchedule, Workflow: wfChild, Key: id, IntervalMS: int64(1+rand.IntN(2)) * 1000,
		Overlap: scheduleOverlaps[int(n-1)%len(scheduleOverlaps)]}
	pause := &Op{Kind: KindSchedulePause, Workflow: wfChild, Key: id}
	return chain{ops: []*Op{create, pause}, pauseAfter: life}
}

// isScheduleOp reports whether op is of the schedule part.
func isScheduleOp(op *Op) bool { return op.Kind == KindSchedule || op.Kind == KindSchedulePause }

// scheduleRequest is the request of a schedule op.
func scheduleRequest(op *Op) request {
	if op.Kind == KindSchedulePause {
		return request{http.MethodPost, "/api/harvest/schedules/" + op.Key + "/pause", op.Key, map[string]any{}}
	}
	return request{http.MethodPost, "/api/harvest/schedules", op.Key, map[string]any{
		"schedule_id": op.Key, "workflow_name": op.Workflow, "input": map[string]any{"activities": 1},
		"interval": fmt.Sprintf("%dms", op.IntervalMS), "overlap": op.Overlap}}
}

// runSchedules runs the schedule chains until ctx ends: one created every
// ScheduleEvery, Schedules in all.
func (w *Workload) runSchedules(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for n := int64(1); n <= int64(w.Schedules) && ctx.Err() == nil; n++ {
		ch := scheduleChain(n, w.ScheduleLife)
		wg.Go(func() { w.runChain(ctx, ch, w.OpTimeout, false) })
		select {
		case <-ctx.Done():
		case <-time.After(w.ScheduleEvery):
		}
	}
}
