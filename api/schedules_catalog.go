package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// Schedules of a cluster: their definitions live in the raft catalog
// (Config.ScheduleCatalog), their cursors and fires on the schedules
// shard. The shard's owner serves every schedule route, as on a dev node;
// for a change it first writes the catalog (through the raft leader: the
// intent, durable in the catalog), then copies the definition into the
// shard (engine SyncSchedule), and before every read or trigger it copies
// whatever its replica of the catalog holds, which also repairs a copy a
// crash left undone.

// ScheduleOp is one change of a schedule's definition: put (create),
// pause, resume or delete.
type ScheduleOp struct {
	Op     string          `json:"op"`
	ID     string          `json:"id"`
	Spec   json.RawMessage `json:"spec,omitempty"`
	Paused bool            `json:"paused,omitempty"`
}

// Schedule operations.
const (
	ScheduleOpPut    = "put"
	ScheduleOpPause  = "pause"
	ScheduleOpResume = "resume"
	ScheduleOpDelete = "delete"
)

// ScheduleCatalog keeps a cluster's schedule definitions (a node's raft
// catalog); nil: the schedules shard keeps them (a dev node).
type ScheduleCatalog interface {
	// Apply makes op on the catalog, through the leader, and returns the
	// definition after it: engine.ErrScheduleExists for a put of a live
	// id, engine.ErrNotFound for a change of none.
	Apply(ctx context.Context, op ScheduleOp) (engine.ScheduleDef, error)
	// ApplyLocal is Apply on the leader itself (POST
	// /internal/catalog/schedules, node to node).
	ApplyLocal(ctx context.Context, op ScheduleOp) (engine.ScheduleDef, error)
	// Schedules is this node's replica of every definition.
	Schedules() []engine.ScheduleDef
}

// syncer is what the schedules shard offers besides scheduler for a
// catalog (an *engine.Engine).
type syncer interface {
	NormalizeSchedule(id string, spec engine.ScheduleSpec) (engine.ScheduleSpec, error)
	SyncSchedule(ctx context.Context, d engine.ScheduleDef) (bool, error)
}

// catalogScheduler is the schedules shard of a cluster: changes go to the
// catalog first, reads see the catalog's copy.
type catalogScheduler struct {
	shard interface {
		scheduler
		syncer
	}
	cat ScheduleCatalog
}

func (c catalogScheduler) CreateSchedule(ctx context.Context, id string, spec engine.ScheduleSpec, paused bool) (engine.Schedule, error) {
	spec, err := c.shard.NormalizeSchedule(id, spec)
	if err != nil {
		return engine.Schedule{}, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return engine.Schedule{}, err
	}
	if err := c.change(ctx, ScheduleOp{Op: ScheduleOpPut, ID: id, Spec: raw, Paused: paused}); err != nil {
		return engine.Schedule{}, err
	}
	return c.shard.GetSchedule(ctx, id)
}

// change applies op to the catalog, then copies the definition.
func (c catalogScheduler) change(ctx context.Context, op ScheduleOp) error {
	d, err := c.cat.Apply(ctx, op)
	if err != nil {
		return err
	}
	_, err = c.shard.SyncSchedule(ctx, d)
	return err
}

// syncAll copies every definition of the replica into the shard.
func (c catalogScheduler) syncAll(ctx context.Context) error {
	var errs []error
	for _, d := range c.cat.Schedules() {
		if _, err := c.shard.SyncSchedule(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c catalogScheduler) GetSchedule(ctx context.Context, id string) (engine.Schedule, error) {
	if err := c.syncAll(ctx); err != nil {
		return engine.Schedule{}, err
	}
	return c.shard.GetSchedule(ctx, id)
}

func (c catalogScheduler) ListSchedules(ctx context.Context) ([]engine.Schedule, error) {
	if err := c.syncAll(ctx); err != nil {
		return nil, err
	}
	return c.shard.ListSchedules(ctx)
}

func (c catalogScheduler) DeleteSchedule(ctx context.Context, id string) error {
	return c.change(ctx, ScheduleOp{Op: ScheduleOpDelete, ID: id})
}

func (c catalogScheduler) PauseSchedule(ctx context.Context, id string) error {
	return c.change(ctx, ScheduleOp{Op: ScheduleOpPause, ID: id})
}

func (c catalogScheduler) ResumeSchedule(ctx context.Context, id string) error {
	return c.change(ctx, ScheduleOp{Op: ScheduleOpResume, ID: id})
}

func (c catalogScheduler) TriggerSchedule(ctx context.Context, id, key string) (engine.ScheduleFire, bool, error) {
	if err := c.syncAll(ctx); err != nil {
		return engine.ScheduleFire{}, false, err
	}
	return c.shard.TriggerSchedule(ctx, id, key)
}

// withCatalog is sch with the cluster's catalog, if it has one.
func (s *Server) withCatalog(sch scheduler) scheduler {
	sy, ok := sch.(interface {
		scheduler
		syncer
	})
	if s.cfg.ScheduleCatalog == nil || !ok {
		return sch
	}
	return catalogScheduler{shard: sy, cat: s.cfg.ScheduleCatalog}
}

// applyScheduleOp handles POST /internal/catalog/schedules (node to node):
// the owner of the schedules shard asks the leader to change the catalog.
func (s *Server) applyScheduleOp(c *gin.Context) {
	if s.cfg.ScheduleCatalog == nil {
		s.fail(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: ErrNoAdmin.Error()})
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var op ScheduleOp
	if err := decodeObject(raw, &op); err != nil {
		s.fail(c, err)
		return
	}
	d, err := s.cfg.ScheduleCatalog.ApplyLocal(c.Request.Context(), op)
	if err != nil {
		s.failSchedule(c, err)
		return
	}
	c.JSON(http.StatusOK, ScheduleDefJSON(d))
}

// ScheduleDefView is a definition on the wire between nodes.
type ScheduleDefView struct {
	ID         string          `json:"id"`
	Spec       json.RawMessage `json:"spec,omitempty"`
	Paused     bool            `json:"paused"`
	Generation int64           `json:"generation"`
	Deleted    bool            `json:"deleted"`
	Revision   uint64          `json:"revision,omitempty"`
}

// ScheduleDefJSON is d on the wire.
func ScheduleDefJSON(d engine.ScheduleDef) ScheduleDefView {
	return ScheduleDefView{ID: d.ID, Spec: d.Spec, Paused: d.Paused, Generation: d.Generation, Deleted: d.Deleted,
		Revision: d.Revision}
}

// Def is v as the engine takes it.
func (v ScheduleDefView) Def() engine.ScheduleDef {
	return engine.ScheduleDef{ID: v.ID, Spec: v.Spec, Paused: v.Paused, Generation: v.Generation, Deleted: v.Deleted,
		Revision: v.Revision}
}
