package harvest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rs/zerolog"
)

// ErrStaleRun is returned by Run.Advance when the events do not continue
// the run: they do not start with the commands of its last step as
// recorded (the step's writes were lost, or another owner wrote). The run
// is stopped; rebuild it from the full history (StartRun).
var ErrStaleRun = errors.New("events do not continue the live run")

// Run is a workflow run kept live between workflow tasks: its coroutines
// stay parked where they blocked, so that the next task applies only the
// events recorded since, instead of replaying the whole history
// (RunWorkflowTask). StartRun builds one by replay; Advance applies new
// events and returns the commands issued since the last step; Stop ends
// its coroutines. A Run is not safe for concurrent use: one task (or
// query) at a time.
//
// A live run is not replayed on each task, so a change of the workflow
// code shows as a NonDeterminismError only when the run is rebuilt (a
// cache miss, an eviction, a restart, an owner change). Check changed
// code against recorded histories before deploying it (ReplayHistory,
// the replayer).
type Run struct {
	s       *runState
	size    int64 // bytes of event data applied
	stopped bool
}

// StartRun replays task.History through the workflow code like
// RunWorkflowTask and keeps the run live. On error the run is stopped and
// nil.
func (r *Registry) StartRun(ctx context.Context, task WorkflowTask, logger zerolog.Logger) (*Run, TaskResult, error) {
	if len(task.History) == 0 || task.History[0].Type != EventWorkflowStarted {
		return nil, TaskResult{}, errors.New("start run: history must start with WorkflowStarted")
	}
	def, ok := r.workflow(task.Info.WorkflowName)
	if !ok {
		return nil, TaskResult{}, fmt.Errorf("start run %q: %w", task.Info.WorkflowName, ErrUnknownWorkflow)
	}
	var started WorkflowStartedData
	if err := json.Unmarshal(task.History[0].Data, &started); err != nil {
		return nil, TaskResult{}, fmt.Errorf("start run: decode WorkflowStarted: %w", err)
	}
	run := &Run{s: newRunState(task, started, logger), size: eventBytes(task.History)}
	run.s.start(def, started.Input)
	if err := run.s.drive(ctx, task.History[1:]); err != nil {
		run.Stop()
		return nil, TaskResult{}, err
	}
	return run, run.result(), nil
}

// Advance applies events, the history recorded after what the run has
// seen: first the commands its last step returned, as recorded, then
// what was delivered since (activity results, timer fires, signals…). It
// returns the commands issued since that step. Replay checks apply as in
// RunWorkflowTask; ctx bounds how long the code may run without blocking.
// After an error the run is stopped: rebuild it with StartRun.
func (run *Run) Advance(ctx context.Context, events []Event) (TaskResult, error) {
	if run.stopped || run.s.finished() {
		return TaskResult{}, fmt.Errorf("advance: %w", ErrStaleRun)
	}
	if err := run.accept(events); err != nil {
		run.Stop()
		return TaskResult{}, err
	}
	run.size += eventBytes(events)
	if err := run.s.drive(ctx, events); err != nil {
		run.Stop()
		return TaskResult{}, err
	}
	return run.result(), nil
}

// accept checks that events start with the commands of the last step and
// records every command among events: those of the last step as matched,
// any later ones (written by another owner) to be matched on replay.
func (run *Run) accept(events []Event) error {
	s := run.s
	pending := s.commands
	if len(events) < len(pending) {
		return fmt.Errorf("advance: %d event(s) for %d pending command(s): %w", len(events), len(pending), ErrStaleRun)
	}
	for i, c := range pending {
		if !sameCommand(events[i], c) {
			return fmt.Errorf("advance: event %d is %s, the run issued %s: %w",
				events[i].EventID, describe(events[i]), describe(Event{Type: c.Type, Data: c.Data}), ErrStaleRun)
		}
	}
	for _, ev := range events {
		if ev.Type.IsCommand() {
			s.recorded = append(s.recorded, ev)
		}
	}
	s.cursor += len(pending)
	s.commands = nil
	return nil
}

// sameCommand reports whether the recorded event is the command c.
func sameCommand(ev Event, c Command) bool {
	if ev.Type != c.Type {
		return false
	}
	id, name := identity(ev)
	cid, cname := identity(Event{Type: c.Type, Data: c.Data})
	return id == cid && name == cname
}

func (run *Run) result() TaskResult {
	return TaskResult{Commands: run.s.commands, Closed: run.s.done}
}

// Query calls the query handler the code registered under name on the
// run's current state, like RunQuery, without replaying. A handler that
// changed the run's scheduling state (it issued a command, started a
// coroutine or a zero timer) leaves the run stopped: rebuild it. A
// handler must not change the workflow's own variables either: unlike a
// replayed query's, a cached run's changes would last.
func (run *Run) Query(name string, args json.RawMessage) (json.RawMessage, error) {
	if run.stopped {
		return nil, fmt.Errorf("query %q: %w", name, ErrStaleRun)
	}
	h, ok := run.s.queries[name]
	if !ok {
		return nil, fmt.Errorf("query %q of %s: %w", name, run.s.info.WorkflowName, ErrUnknownQuery)
	}
	before := run.s.mark()
	out, err := run.s.runQuery(name, h, args)
	if run.s.mark() != before {
		run.Stop()
	}
	return out, err
}

// Stopped reports whether the run was stopped (Stop, a failed step, a
// query that changed it): it can no longer be advanced or queried.
func (run *Run) Stopped() bool { return run.stopped }

// runMark is what a query must leave unchanged in a run's scheduling
// state.
type runMark struct {
	seq, coros, commands int
	order                int64
}

func (s *runState) mark() runMark {
	return runMark{seq: s.seq, coros: len(s.coros), commands: len(s.commands), order: s.order}
}

// Size is the bytes of event data the run has applied: the measure a
// cache of runs is bounded by.
func (run *Run) Size() int64 { return run.size }

// Stop ends the run's coroutines (each exits where it is parked). It is
// idempotent; a run whose code is still running past its task's deadline
// is left to finish on its own, as RunWorkflowTask leaves it.
func (run *Run) Stop() {
	if run.stopped {
		return
	}
	run.stopped = true
	run.s.stop()
}

func eventBytes(events []Event) int64 {
	var n int64
	for _, ev := range events {
		n += int64(len(ev.Data))
	}
	return n
}
