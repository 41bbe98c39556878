package engine

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/activity"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// ActivityRunner runs one attempt of an activity by name on its JSON
// input (internal/activity).
type ActivityRunner = activity.Runner

// ActivityResolver finds the HTTP activities registered at run time
// (internal/activity).
type ActivityResolver = activity.Resolver

// Workflow timeout kinds, the suffixes of the reserved timer ids of a
// run's execution and run timeouts (internal/runs).
const (
	TimeoutExecution = runs.TimeoutExecution
	TimeoutRun       = runs.TimeoutRun
)

// Activity timeout types, as recorded in ActivityTimedOut.
const (
	TimeoutStartToClose    = activity.TimeoutStartToClose
	TimeoutScheduleToClose = activity.TimeoutScheduleToClose
	TimeoutHeartbeat       = activity.TimeoutHeartbeat
)

// newActivities makes the activity path (internal/activity).
func (e *Engine) newActivities() *activity.Attempts {
	return activity.New(activity.Deps{Service: e.service("activities"), Reg: e.reg, Code: e.cfg.Activities,
		HTTP: e.cfg.HTTPActivities, Policy: e.cfg.CallbackPolicy, WF: e.wf, Clock: e.cfg.Clock, Epoch: e.epoch.Load,
		Workers: e.cfg.ActivityWorkers, LeaseTTL: e.cfg.LeaseTTL, Wake: e.bus.Activity, Spawn: e.spawn, Loops: &e.loops,
		Limits: e.lim})
}

// CompleteActivity completes the attempt token names with out.
func (e *Engine) CompleteActivity(ctx context.Context, token string, out json.RawMessage) (AsyncAnswer, error) {
	return e.act.CompleteActivity(ctx, token, out)
}

// FailActivity fails the attempt token names with info; the retry policy
// applies (a retryable failure makes a new attempt due).
func (e *Engine) FailActivity(ctx context.Context, token string, info harvest.ErrorInfo) (AsyncAnswer, error) {
	return e.act.FailActivity(ctx, token, info)
}

// HeartbeatActivity records a heartbeat of the attempt token names and
// pushes its heartbeat timeout back; CancelRequested says the workflow
// cancelled the activity (fail it then, or complete it).
func (e *Engine) HeartbeatActivity(ctx context.Context, token string, details json.RawMessage) (AsyncAnswer, error) {
	return e.act.HeartbeatActivity(ctx, token, details)
}

// ParseTaskToken returns the execution a task token is for; ErrTaskToken
// when it is not one.
func ParseTaskToken(token string) (uuid.UUID, error) { return activity.ParseTaskToken(token) }
