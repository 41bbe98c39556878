package admin

import (
	"encoding/json"
	"fmt"
	"time"
)

// ScheduleDef is a schedule's definition as the raft catalog holds it
// (package engine reads Spec; the catalog only stores it). The cursor and
// the recent fires live in the database of the schedule's shard, whose
// owner copies every definition there before it fires (engine
// SyncSchedule). A deleted schedule stays as a marker with its
// generation, so that creating it again bumps the generation and its new
// fires never meet the old fire keys.
type ScheduleDef struct {
	ID         string          `json:"id"`
	Spec       json.RawMessage `json:"spec,omitempty"`
	Paused     bool            `json:"paused"`
	Generation int64           `json:"generation"`
	Deleted    bool            `json:"deleted,omitempty"`
	// Revision is the raft index of the definition's last change: a
	// shard's copy never goes back to an older revision (a replica may
	// lag behind the leader's answer). Zero before it was kept.
	Revision  uint64    `json:"revision,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PutSchedule creates a schedule (the next generation of one deleted
// before). Rejection: ErrScheduleExists for a live schedule of that id.
type PutSchedule struct {
	ID     string          `json:"id"`
	Spec   json.RawMessage `json:"spec"`
	Paused bool            `json:"paused"`
	At     time.Time       `json:"at"`
}

// SetSchedulePaused pauses or resumes a live schedule. Rejection:
// ErrUnknownSchedule.
type SetSchedulePaused struct {
	ID     string    `json:"id"`
	Paused bool      `json:"paused"`
	At     time.Time `json:"at"`
}

// DeleteSchedule deletes a live schedule, keeping its marker. Rejection:
// ErrUnknownSchedule.
type DeleteSchedule struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

var (
	_ Command = PutSchedule{}
	_ Command = SetSchedulePaused{}
	_ Command = DeleteSchedule{}
)

func (PutSchedule) Type() CommandType       { return CmdPutSchedule }
func (SetSchedulePaused) Type() CommandType { return CmdSetSchedulePaused }
func (DeleteSchedule) Type() CommandType    { return CmdDeleteSchedule }

func (p PutSchedule) stamped(now time.Time) Command       { p.At = stamp(p.At, now); return p }
func (s SetSchedulePaused) stamped(now time.Time) Command { s.At = stamp(s.At, now); return s }
func (d DeleteSchedule) stamped(now time.Time) Command    { d.At = stamp(d.At, now); return d }

func (p PutSchedule) check() error {
	if err := checkScheduleID(p.ID); err != nil {
		return err
	}
	if !json.Valid(p.Spec) || len(p.Spec) == 0 {
		return fmt.Errorf("schedule %s: spec is not JSON: %w", p.ID, ErrInvalidCommand)
	}
	return nil
}

func (s SetSchedulePaused) check() error { return checkScheduleID(s.ID) }
func (d DeleteSchedule) check() error    { return checkScheduleID(d.ID) }

func checkScheduleID(id string) error {
	if id == "" {
		return fmt.Errorf("schedule command without an id: %w", ErrInvalidCommand)
	}
	return nil
}

func (p PutSchedule) apply(c *Catalog) error {
	old, ok := c.Schedules[p.ID]
	if ok && !old.Deleted {
		return fmt.Errorf("schedule %s: %w", p.ID, ErrScheduleExists)
	}
	if c.Schedules == nil {
		c.Schedules = make(map[string]ScheduleDef)
	}
	at := p.At.UTC()
	c.Schedules[p.ID] = ScheduleDef{ID: p.ID, Spec: p.Spec, Paused: p.Paused, Generation: old.Generation + 1,
		Revision: c.Index, CreatedAt: at, UpdatedAt: at}
	return nil
}

func (s SetSchedulePaused) apply(c *Catalog) error {
	d, err := c.liveSchedule(s.ID)
	if err != nil {
		return err
	}
	d.Paused, d.UpdatedAt, d.Revision = s.Paused, s.At.UTC(), c.Index
	c.Schedules[s.ID] = d
	return nil
}

func (d DeleteSchedule) apply(c *Catalog) error {
	def, err := c.liveSchedule(d.ID)
	if err != nil {
		return err
	}
	def.Deleted, def.Paused, def.Spec, def.UpdatedAt, def.Revision = true, false, nil, d.At.UTC(), c.Index
	c.Schedules[d.ID] = def
	return nil
}

// liveSchedule is the schedule id, unless unknown or deleted.
func (c *Catalog) liveSchedule(id string) (ScheduleDef, error) {
	d, ok := c.Schedules[id]
	if !ok || d.Deleted {
		return ScheduleDef{}, fmt.Errorf("schedule %s: %w", id, ErrUnknownSchedule)
	}
	return d, nil
}
