package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// Schedules (docs/schedules.md). A schedule lives on the schedules shard:
// the lowest shard of the catalog (a dev node's one shard), whose owner
// fires it; every route is served there, forwarded like any shard's.

// scheduler is what a shard served here offers for schedules (an
// *engine.Engine).
type scheduler interface {
	CreateSchedule(ctx context.Context, id string, spec engine.ScheduleSpec, paused bool) (engine.Schedule, error)
	GetSchedule(ctx context.Context, id string) (engine.Schedule, error)
	ListSchedules(ctx context.Context) ([]engine.Schedule, error)
	DeleteSchedule(ctx context.Context, id string) error
	PauseSchedule(ctx context.Context, id string) error
	ResumeSchedule(ctx context.Context, id string) error
	TriggerSchedule(ctx context.Context, id, key string) (engine.ScheduleFire, bool, error)
}

func (s *Server) scheduleRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/schedules", needRead, s.listSchedules)
	s.handle(g, http.MethodPost, "/schedules", needAdmin, s.createSchedule)
	s.handle(g, http.MethodGet, "/schedules/:schedule", needRead, s.describeSchedule)
	s.handle(g, http.MethodDelete, "/schedules/:schedule", needAdmin, s.deleteSchedule)
	s.handle(g, http.MethodPost, "/schedules/:schedule/pause", needAdmin, s.pauseSchedule)
	s.handle(g, http.MethodPost, "/schedules/:schedule/resume", needAdmin, s.resumeSchedule)
	s.handle(g, http.MethodPost, "/schedules/:schedule/trigger", needWrite, s.triggerSchedule)
}

// scheduleBody is the body of POST /schedules. Durations are Go duration
// strings ("90s") or numbers of seconds.
type scheduleBody struct {
	ScheduleID    string          `json:"schedule_id"`
	WorkflowName  string          `json:"workflow_name"`
	WorkflowID    string          `json:"workflow_id"`
	Input         json.RawMessage `json:"input"`
	Cron          string          `json:"cron"`
	TimeZone      string          `json:"time_zone"`
	Interval      json.RawMessage `json:"interval"`
	Offset        json.RawMessage `json:"offset"`
	Overlap       string          `json:"overlap"`
	CatchUpWindow json.RawMessage `json:"catch_up_window"`
	Jitter        json.RawMessage `json:"jitter"`
	EndAt         *time.Time      `json:"end_at"`
	Paused        bool            `json:"paused"`
}

// scheduleAnswer is a schedule as the API shows it.
type scheduleAnswer struct {
	ScheduleID    string                `json:"schedule_id"`
	Generation    int64                 `json:"generation"`
	WorkflowName  string                `json:"workflow_name"`
	WorkflowID    string                `json:"workflow_id,omitempty"`
	Input         json.RawMessage       `json:"input,omitempty"`
	Cron          string                `json:"cron,omitempty"`
	TimeZone      string                `json:"time_zone,omitempty"`
	Interval      string                `json:"interval,omitempty"`
	Offset        string                `json:"offset,omitempty"`
	Overlap       string                `json:"overlap"`
	CatchUpWindow string                `json:"catch_up_window"`
	Jitter        string                `json:"jitter,omitempty"`
	EndAt         *time.Time            `json:"end_at,omitempty"`
	Paused        bool                  `json:"paused"`
	Cursor        time.Time             `json:"cursor"`
	NextFires     []time.Time           `json:"next_fires"`
	CreatedAt     time.Time             `json:"created_at"`
	UpdatedAt     time.Time             `json:"updated_at"`
	RecentFires   []engine.ScheduleFire `json:"recent_fires,omitempty"`
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func scheduleJSON(sc engine.Schedule) scheduleAnswer {
	sp := sc.Spec
	return scheduleAnswer{ScheduleID: sc.ID, Generation: sc.Generation, WorkflowName: sp.WorkflowName, WorkflowID: sp.WorkflowID,
		Input: sp.Input, Cron: sp.Cron, TimeZone: sp.TimeZone, Interval: durationText(sp.Interval), Offset: durationText(sp.Offset),
		Overlap: sp.Overlap, CatchUpWindow: sp.CatchUpWindow.String(), Jitter: durationText(sp.Jitter), EndAt: sp.EndAt,
		Paused: sc.Paused, Cursor: sc.Cursor, NextFires: sc.NextFires, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt,
		RecentFires: sc.Fires}
}

// scheduleShard routes a schedules request to the schedules shard; nil
// when it was forwarded or refused (and answered).
func (s *Server) scheduleShard(c *gin.Context, body []byte) scheduler {
	shards := s.router.Shards()
	if len(shards) == 0 {
		s.fail(c, fmt.Errorf("no shard holds the schedules yet: %w", engine.ErrNotRunning))
		return nil
	}
	t, err := s.router.ForShard(slices.Min(shards))
	if err != nil {
		s.fail(c, err)
		return nil
	}
	shard := s.serveOrForward(c, t, body)
	if shard == nil {
		return nil
	}
	sch, ok := shard.(scheduler)
	if !ok {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "this node's shards keep no schedules"})
		return nil
	}
	return s.withCatalog(sch)
}

// scheduleID reads and checks the :schedule path parameter.
func scheduleID(c *gin.Context) (string, error) {
	id := c.Param("schedule")
	if err := engine.ValidScheduleID(id); err != nil {
		return "", badRequest(codeInvalidArgument, err.Error())
	}
	return id, nil
}

// failSchedule answers a schedule operation's error.
func (s *Server) failSchedule(c *gin.Context, err error) {
	switch {
	case errors.Is(err, engine.ErrScheduleExists):
		err = &apiError{status: http.StatusConflict, code: codeConflict, msg: err.Error()}
	case errors.Is(err, ErrOutcomeUnknown): // the catalog change through the raft leader
		err = s.adminError(err)
	}
	s.fail(c, err)
}

// createSchedule handles POST /schedules.
func (s *Server) createSchedule(c *gin.Context) {
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var b scheduleBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	spec, err := b.spec()
	if err != nil {
		s.fail(c, err)
		return
	}
	setAuditTarget(c, "schedule="+b.ScheduleID)
	sch := s.scheduleShard(c, raw)
	if sch == nil {
		return
	}
	sc, err := sch.CreateSchedule(c.Request.Context(), b.ScheduleID, spec, b.Paused)
	if err != nil {
		s.failSchedule(c, err)
		return
	}
	c.JSON(http.StatusCreated, scheduleJSON(sc))
}

// spec checks the body's fields and builds the engine's spec (the engine
// checks the rest: the cron, the zone, the workflow, the bounds).
func (b *scheduleBody) spec() (engine.ScheduleSpec, error) {
	if err := engine.ValidScheduleID(b.ScheduleID); err != nil {
		return engine.ScheduleSpec{}, badRequest(codeInvalidArgument, err.Error())
	}
	err := checkTexts(textParam{"workflow_id", b.WorkflowID, maxIDLen}, textParam{"cron", b.Cron, maxNameLen},
		textParam{"time_zone", b.TimeZone, maxNameLen}, textParam{"overlap", b.Overlap, maxNameLen})
	if err == nil {
		err = checkText("workflow_name", b.WorkflowName, maxNameLen, true)
	}
	if err != nil {
		return engine.ScheduleSpec{}, err
	}
	spec := engine.ScheduleSpec{WorkflowName: b.WorkflowName, WorkflowID: b.WorkflowID, Input: b.Input, Cron: b.Cron,
		TimeZone: b.TimeZone, Overlap: b.Overlap, EndAt: b.EndAt}
	for _, d := range []struct {
		field string
		raw   json.RawMessage
		dst   *time.Duration
	}{{"interval", b.Interval, &spec.Interval}, {"offset", b.Offset, &spec.Offset},
		{"catch_up_window", b.CatchUpWindow, &spec.CatchUpWindow}, {"jitter", b.Jitter, &spec.Jitter}} {
		v, err := parseDuration(d.field, d.raw)
		if err != nil {
			return spec, err
		}
		*d.dst = deref(v)
	}
	return spec, nil
}

// listSchedules handles GET /schedules.
func (s *Server) listSchedules(c *gin.Context) {
	sch := s.scheduleShard(c, nil)
	if sch == nil {
		return
	}
	list, err := sch.ListSchedules(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]scheduleAnswer, len(list))
	for i, sc := range list {
		out[i] = scheduleJSON(sc)
	}
	c.JSON(http.StatusOK, gin.H{"schedules": out})
}

// onSchedule checks :schedule, routes the request and runs op on the
// schedules shard; false when it answered already.
func (s *Server) onSchedule(c *gin.Context, op func(ctx context.Context, sch scheduler, id string) error) {
	s.onScheduleBody(c, func(ctx context.Context, sch scheduler, id string, _ []byte) error { return op(ctx, sch, id) })
}

// onScheduleBody is onSchedule for an op that reads the request's body.
func (s *Server) onScheduleBody(c *gin.Context, op func(ctx context.Context, sch scheduler, id string, raw []byte) error) {
	id, err := scheduleID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	sch := s.scheduleShard(c, raw)
	if sch == nil {
		return
	}
	if err := op(c.Request.Context(), sch, id, raw); err != nil {
		s.failSchedule(c, err)
	}
}

// describeSchedule handles GET /schedules/{id}: the schedule, its next
// fire times and its recent fires.
func (s *Server) describeSchedule(c *gin.Context) {
	s.onSchedule(c, func(ctx context.Context, sch scheduler, id string) error {
		sc, err := sch.GetSchedule(ctx, id)
		if err == nil {
			c.JSON(http.StatusOK, scheduleJSON(sc))
		}
		return err
	})
}

// deleteSchedule handles DELETE /schedules/{id}.
func (s *Server) deleteSchedule(c *gin.Context) {
	s.onSchedule(c, func(ctx context.Context, sch scheduler, id string) error {
		err := sch.DeleteSchedule(ctx, id)
		if err == nil {
			c.JSON(http.StatusOK, gin.H{"ok": true, "schedule_id": id})
		}
		return err
	})
}

// pauseSchedule handles POST /schedules/{id}/pause.
func (s *Server) pauseSchedule(c *gin.Context) { s.changeSchedule(c, scheduler.PauseSchedule) }

// resumeSchedule handles POST /schedules/{id}/resume.
func (s *Server) resumeSchedule(c *gin.Context) { s.changeSchedule(c, scheduler.ResumeSchedule) }

// changeSchedule applies change and answers the schedule.
func (s *Server) changeSchedule(c *gin.Context, change func(scheduler, context.Context, string) error) {
	s.onSchedule(c, func(ctx context.Context, sch scheduler, id string) error {
		if err := change(sch, ctx, id); err != nil {
			return err
		}
		sc, err := sch.GetSchedule(ctx, id)
		if err == nil {
			c.JSON(http.StatusOK, scheduleJSON(sc))
		}
		return err
	})
}

// triggerSchedule handles POST /schedules/{id}/trigger: one fire now;
// with an idempotency key (the Idempotency-Key header, which wins, or
// the body's idempotency_key) a retry answers the first trigger's fire.
func (s *Server) triggerSchedule(c *gin.Context) {
	s.onScheduleBody(c, func(ctx context.Context, sch scheduler, id string, raw []byte) error {
		key, err := triggerKey(c, raw)
		if err != nil {
			return err
		}
		fire, dup, err := sch.TriggerSchedule(ctx, id, key)
		if err != nil {
			return err
		}
		out := gin.H{"schedule_id": id, "fire": fire}
		if key != "" {
			out["deduplicated"] = dup
		}
		c.JSON(http.StatusAccepted, out)
		return nil
	})
}

// triggerKey is a trigger's idempotency key ("" for none).
func triggerKey(c *gin.Context, raw []byte) (string, error) {
	key, present, err := idempotencyKey(c)
	if present || err != nil {
		return key, err
	}
	var b struct {
		IdempotencyKey *string `json:"idempotency_key"`
	}
	if err := decodeObject(raw, &b); err != nil || b.IdempotencyKey == nil {
		return "", err
	}
	return *b.IdempotencyKey, checkKey(c, "idempotency_key", *b.IdempotencyKey)
}
