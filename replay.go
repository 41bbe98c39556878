package harvest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// WorkflowTask is the input of one workflow task: the run and its full
// history, WorkflowStarted first.
type WorkflowTask struct {
	Info    WorkflowInfo
	History []Event
}

// TaskResult is what a workflow task produced.
type TaskResult struct {
	// Commands are the new events to append, in order.
	Commands []Command
	// Closed is true when the last command closes the run.
	Closed bool
}

// RunWorkflowTask replays the workflow over task.History and runs it until
// it blocks or returns; the result lists the commands that are not in the
// history yet.
//
// Replay model: the code is started, then every delivered event of the
// history (activity results, timer fires, signals) is handed to it in
// order, and after each one the code (every coroutine, see sched.go) runs until it blocks again. Commands
// the code issues are matched, in issue order, against the commands already
// recorded (ActivityScheduled, TimerStarted, MarkerRecorded, completion);
// a mismatch, or recorded commands the code no longer issues, is a
// NonDeterminismError. A panic is a PanicError. Both fail the task, never
// the history. ctx bounds how long the code may run without blocking.
func (r *Registry) RunWorkflowTask(ctx context.Context, task WorkflowTask, logger zerolog.Logger) (TaskResult, error) {
	if len(task.History) == 0 || task.History[0].Type != EventWorkflowStarted {
		return TaskResult{}, errors.New("run workflow task: history must start with WorkflowStarted")
	}
	def, ok := r.workflow(task.Info.WorkflowName)
	if !ok {
		return TaskResult{}, fmt.Errorf("run workflow task %q: %w", task.Info.WorkflowName, ErrUnknownWorkflow)
	}
	var started WorkflowStartedData
	if err := json.Unmarshal(task.History[0].Data, &started); err != nil {
		return TaskResult{}, fmt.Errorf("run workflow task: decode WorkflowStarted: %w", err)
	}
	s := newRunState(task, started, logger)
	s.start(def, started.Input)
	defer s.stop()
	if err := s.drive(ctx, task.History[1:]); err != nil {
		return TaskResult{}, err
	}
	return TaskResult{Commands: s.commands, Closed: s.done}, nil
}

// runState is one replay: the workflow coroutine and what it has issued.
// The driver and the coroutine never run at the same time: they hand
// control over through resume and yielded.
type runState struct {
	info WorkflowInfo
	// keyBase is what the run's keys derive from (WorkflowStartedData.KeyBase).
	keyBase string
	now     time.Time
	logger  zerolog.Logger

	seq      int
	recorded []Event // command events already in history
	cursor   int     // next recorded command to match
	commands []Command

	activities map[string]*future
	timers     map[string]*future
	signals    map[string][]arrival
	externals  map[string]*future   // SignalExternal sends by command id (external.go)
	children   map[string]*childRun // child workflows by command id (child.go)
	order      int64                // last delivery sequence number handed out (tick)
	cancel     cancelState
	// length is the history length up to the code's current point
	// (WorkflowInfo.HistoryLength); rest are the events not delivered yet.
	length int
	rest   []Event

	ndErr    error
	panicErr *PanicError
	done     bool
	exiting  bool
	stuck    bool

	coros   []*coroutine // in creation order; coros[0] runs the workflow function
	current *coroutine   // the one running, set by the driver before it resumes one

	queries  map[string]queryHandler // registered by SetQueryHandler
	querying bool                    // a query handler runs: commands and waits fail it

	updates  map[string]updateHandler // registered by Update.SetHandler
	updating map[string]string        // update id → name of the handlers running (update.go)
}

func newRunState(task WorkflowTask, started WorkflowStartedData, logger zerolog.Logger) *runState {
	s := &runState{
		info:       task.Info,
		now:        task.History[0].Timestamp,
		logger:     logger,
		activities: map[string]*future{},
		timers:     map[string]*future{},
		signals:    map[string][]arrival{},
		length:     1,
		externals:  map[string]*future{},
		children:   map[string]*childRun{},
	}
	if s.info.StartedAt.IsZero() {
		s.info.StartedAt = s.now
	}
	s.info.ChainID, s.info.ContinuedFrom = cmp.Or(started.ChainID, s.info.ExecutionID), started.ContinuedFrom
	s.keyBase = cmp.Or(started.KeyBase, s.info.ExecutionID)
	for _, ev := range task.History {
		if ev.Type.IsCommand() {
			s.recorded = append(s.recorded, ev)
		}
	}
	return s
}

func (s *runState) start(def workflowDef, input json.RawMessage) {
	s.spawn(func() {
		out, err := s.runUser(def, input)
		if s.panicErr == nil {
			s.complete(out, err)
		}
		s.done = true
	})
}

func (s *runState) runUser(def workflowDef, input json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.panicErr = &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	return def.run(wfContext{s: s}, input)
}

func (s *runState) complete(out json.RawMessage, err error) {
	if can, ok := asContinueAsNew(err); ok {
		s.continueAsNew(can)
		return
	}
	if errors.Is(err, ErrCanceled) {
		s.issue(EventWorkflowCancelled, "", "", args{}, func() any {
			return WorkflowClosedData{Reason: s.cancel.reason}
		})
		return
	}
	if err != nil {
		s.issue(EventWorkflowFailed, "", "", args{}, func() any {
			return WorkflowFailedData{Error: ToErrorInfo(err)}
		})
		return
	}
	s.issue(EventWorkflowCompleted, "", "", args{}, func() any {
		return WorkflowCompletedData{Output: out}
	})
}

// drive runs the coroutine to its first block, then delivers events.
func (s *runState) drive(ctx context.Context, events []Event) error {
	s.rest = events
	if err := s.step(ctx); err != nil {
		return err
	}
	for i, ev := range events {
		if s.finished() || ev.Type.IsTerminal() {
			break
		}
		s.rest = events[i+1:]
		if ev.Type.IsCommand() {
			continue
		}
		if ev.Timestamp.After(s.now) {
			s.now = ev.Timestamp
		}
		s.length = int(ev.EventID) + 1
		if err := s.deliver(ev); err != nil {
			s.ndErr = err
			break
		}
		if err := s.step(ctx); err != nil {
			return err
		}
	}
	switch {
	case s.panicErr != nil:
		return s.panicErr
	case s.ndErr != nil:
		return s.ndErr
	case s.cursor < len(s.recorded):
		next := s.recorded[s.cursor]
		return &NonDeterminismError{EventID: next.EventID, Message: fmt.Sprintf(
			"history has %d recorded command(s) the code no longer issues, next %s", len(s.recorded)-s.cursor, describe(next))}
	}
	return nil
}

func (s *runState) finished() bool { return s.done || s.ndErr != nil || s.panicErr != nil }

// step runs every runnable coroutine, in creation order, until all block.
func (s *runState) step(ctx context.Context) error {
	for progressed := true; progressed && !s.finished(); {
		progressed = false
		for i := 0; i < len(s.coros) && !s.finished(); i++ {
			if !s.coros[i].runnable() {
				continue
			}
			if err := s.resumeOne(ctx, s.coros[i]); err != nil {
				return err
			}
			progressed = true
		}
		if progressed && ctx.Err() != nil {
			return fmt.Errorf("workflow coroutines did not block: %w", ctx.Err())
		}
	}
	return nil
}

// stop ends every coroutine still blocked inside workflow code.
func (s *runState) stop() {
	if s.stuck {
		return // one is still running user code; it cannot be interrupted
	}
	s.exiting = true
	for _, c := range s.coros {
		if !c.done {
			s.current = c
			c.resume <- false
		}
		<-c.exited
	}
}

// yield hands control back to the driver until cond may hold; called on
// the running coroutine only.
func (s *runState) yield(cond func() bool) {
	s.failIfQuery()
	if s.exiting {
		runtime.Goexit()
	}
	c := s.current
	c.waitFor = cond
	c.yielded <- struct{}{}
	if !<-c.resume {
		runtime.Goexit()
	}
}

// await blocks the running coroutine until cond holds.
func (s *runState) await(cond func() bool) {
	s.failIfQuery()
	for !cond() {
		s.yield(cond)
	}
}

// nonDeterministic records the error and parks the coroutine for good.
func (s *runState) nonDeterministic(eventID int64, msg string) {
	s.ndErr = &NonDeterminismError{EventID: eventID, Message: msg}
	for {
		s.yield(never)
	}
}

func (s *runState) deliver(ev Event) error {
	var d struct {
		ActivityID  string          `json:"activity_id"`
		TimerID     string          `json:"timer_id"`
		SignalName  string          `json:"signal_name"`
		Payload     json.RawMessage `json:"payload"`
		Key         string          `json:"idempotency_key"`
		Output      json.RawMessage `json:"output"`
		Error       ErrorInfo       `json:"error"`
		TimeoutType string          `json:"timeout_type"`
		Reason      string          `json:"reason"`
		CommandID   string          `json:"command_id"`
		ExecutionID string          `json:"execution_id"`
		WorkflowID  string          `json:"workflow_id"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return &NonDeterminismError{EventID: ev.EventID, Message: "undecodable " + string(ev.Type) + ": " + err.Error()}
	}
	switch ev.Type {
	case EventActivityCompleted, EventActivityFailed, EventActivityTimedOut:
		f, ok := s.activities[d.ActivityID]
		if !ok {
			return &NonDeterminismError{EventID: ev.EventID, Message: fmt.Sprintf("%s for activity %s that the code did not schedule", ev.Type, d.ActivityID)}
		}
		switch ev.Type {
		case EventActivityCompleted:
			f.resolve(d.Output, nil)
		case EventActivityFailed:
			f.resolve(nil, &ActivityError{ActivityID: d.ActivityID, ActivityName: s.activityName(d.ActivityID), Info: d.Error})
		default:
			f.resolve(nil, &ActivityError{ActivityID: d.ActivityID, ActivityName: s.activityName(d.ActivityID), TimeoutType: d.TimeoutType,
				Info: ErrorInfo{Message: "timeout: " + d.TimeoutType, Type: "timeout"}})
		}
		f.seq = s.tick()
	case EventTimerFired:
		f, ok := s.timers[d.TimerID]
		if !ok {
			return &NonDeterminismError{EventID: ev.EventID, Message: fmt.Sprintf("TimerFired for timer %s that the code did not start", d.TimerID)}
		}
		f.resolve(nil, nil)
		f.seq = s.tick()
	case EventSignalReceived:
		if d.SignalName == ChildClosedSignal {
			return s.childClosed(ev, d.Payload)
		}
		s.signals[d.SignalName] = append(s.signals[d.SignalName], arrival{seq: s.tick(), name: d.SignalName, payload: d.Payload, key: d.Key})
		if d.SignalName == UpdateSignal {
			s.dispatchUpdates()
		}
	case EventWorkflowCancelRequested:
		s.requestCancel(d.Reason)
	case EventExternalSignalDelivered, EventExternalSignalFailed:
		return s.externalAnswered(ev, d.CommandID, d.Error)
	case EventChildWorkflowStarted, EventChildWorkflowStartFailed:
		return s.childStarted(ev, d.CommandID, d.ExecutionID, d.WorkflowID, d.Error)
	}
	return nil
}

func (s *runState) activityName(id string) string {
	for _, ev := range s.recorded {
		if ev.Type == EventActivityScheduled {
			if gotID, name := identity(ev); gotID == id {
				return name
			}
		}
	}
	for _, c := range s.commands {
		if c.Type == EventActivityScheduled {
			if gotID, name := identity(Event{Type: c.Type, Data: c.Data}); gotID == id {
				return name
			}
		}
	}
	return ""
}

// issue matches a command against the next recorded one, by kind, id,
// name and argument digest (when the recorded one has a digest), or
// records it as new. It returns the recorded event when the command was
// replayed.
func (s *runState) issue(t EventType, id, name string, a args, payload func() any) (*Event, bool) {
	s.failIfQuery()
	if s.exiting {
		runtime.Goexit()
	}
	if s.cursor < len(s.recorded) {
		ev := s.recorded[s.cursor]
		gotID, gotName, gotDigest := commandKey(ev)
		if ev.Type != t || gotID != id || gotName != name {
			s.nonDeterministic(ev.EventID, fmt.Sprintf("code issued %s, history has %s",
				describe(Event{Type: t, Data: mustJSON(payload())}), describe(ev)))
		}
		if msg := a.mismatch(ev, gotDigest); msg != "" {
			s.nonDeterministic(ev.EventID, describe(ev)+": "+msg)
		}
		s.cursor++
		return &ev, false
	}
	s.commands = append(s.commands, NewCommand(t, payload()))
	return nil, true
}

func (s *runState) nextSeq() string {
	s.seq++
	return strconv.Itoa(s.seq)
}

func (s *runState) scheduleActivity(name string, input json.RawMessage, opts ActivityOptions) *future {
	id := s.nextSeq()
	f := &future{}
	a := activityArgs(name, input, opts)
	s.issue(EventActivityScheduled, id, name, a, func() any {
		return ActivityScheduledData{ActivityID: id, Name: name, Input: input, Queue: opts.Queue,
			IdempotencyKey: string(ActivityKey(s.keyBase, id)), Options: opts.Stored(), Digest: a.sum}
	})
	s.activities[id] = f
	return f
}

func (s *runState) startTimer(d time.Duration) *future {
	if d <= 0 {
		f := resolvedFuture(nil, nil)
		f.seq = s.tick()
		return f
	}
	id := s.nextSeq()
	f := &future{}
	a := timerArgs(d.Milliseconds())
	s.issue(EventTimerStarted, id, "", a, func() any {
		return TimerStartedData{TimerID: id, DurationMS: d.Milliseconds(), Digest: a.sum}
	})
	s.timers[id] = f
	return f
}

func (s *runState) recordMarker(name string) (json.RawMessage, bool) {
	id := s.nextSeq()
	a := markerArgs(name, "")
	ev, isNew := s.issue(EventMarkerRecorded, id, name, a, func() any {
		return MarkerRecordedData{Name: name, MarkerID: id, Digest: a.sum}
	})
	if isNew {
		return nil, true
	}
	var m MarkerRecordedData
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		s.nonDeterministic(ev.EventID, "undecodable MarkerRecorded: "+err.Error())
	}
	return m.Details, false
}

// fillMarker sets the details of the marker command just issued.
func (s *runState) fillMarker(details json.RawMessage) {
	last := &s.commands[len(s.commands)-1]
	var m MarkerRecordedData
	_ = json.Unmarshal(last.Data, &m)
	m.Details = details
	*last = NewCommand(last.Type, m)
}

func (s *runState) hasSignal(name string) bool { return len(s.signals[name]) > 0 }

func (s *runState) popSignal(name string) json.RawMessage {
	q := s.signals[name]
	v := q[0]
	s.signals[name] = q[1:]
	return v.payload
}

// identity extracts the id and name a recorded command is matched by.
func identity(ev Event) (id, name string) {
	id, name, _ = commandKey(ev)
	return id, name
}

// commandKey extracts what a recorded command is matched by: id, name and
// argument digest ("" when recorded before digests existed).
func commandKey(ev Event) (id, name, digest string) {
	var d struct {
		ActivityID string `json:"activity_id"`
		TimerID    string `json:"timer_id"`
		MarkerID   string `json:"marker_id"`
		UpdateID   string `json:"update_id"`
		CommandID  string `json:"command_id"`
		Name       string `json:"name"`
		SignalName string `json:"signal_name"`
		Workflow   string `json:"workflow_name"`
		Digest     string `json:"digest"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	switch ev.Type {
	case EventActivityScheduled:
		return d.ActivityID, d.Name, d.Digest
	case EventTimerStarted:
		return d.TimerID, "", d.Digest
	case EventTimerCanceled:
		return d.TimerID, "", ""
	case EventActivityCancelRequested:
		return d.ActivityID, "", ""
	case EventMarkerRecorded:
		return d.MarkerID, d.Name, d.Digest
	case EventSignalExternalInitiated:
		return d.CommandID, d.SignalName, d.Digest
	case EventChildWorkflowInitiated:
		return d.CommandID, d.Workflow, d.Digest
	case EventUpdateCompleted:
		return d.UpdateID, d.Name, ""
	}
	return "", "", ""
}

func describe(ev Event) string {
	id, name := identity(ev)
	switch {
	case name != "":
		return fmt.Sprintf("%s(%s %s)", ev.Type, id, name)
	case id != "":
		return fmt.Sprintf("%s(%s)", ev.Type, id)
	}
	return string(ev.Type)
}

// wfContext is the Context handed to workflow code; a detached one is
// disconnected from cancellation (NewDisconnectedContext).
type wfContext struct {
	s        *runState
	detached bool
	sc       *cancelScope // a WithCancel scope (scope.go), nil for the root
}

var nopLogger = zerolog.Nop()

func (c wfContext) Info() WorkflowInfo {
	info := c.s.info
	info.HistoryLength = c.s.length
	return info
}
func (c wfContext) Now() time.Time    { return c.s.now }
func (c wfContext) IsReplaying() bool { return c.s.cursor < len(c.s.recorded) }
func (c wfContext) state() *runState  { return c.s }
func (c wfContext) Logger() *zerolog.Logger {
	if c.IsReplaying() {
		return &nopLogger
	}
	return &c.s.logger
}
