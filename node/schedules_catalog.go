package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
)

// scheduleOpTimeout bounds a catalog change asked of the leader.
const scheduleOpTimeout = 15 * time.Second

// raftSchedules keeps a cluster's schedule definitions in the raft
// catalog (api.ScheduleCatalog). The owner of the schedules shard changes
// them: on the leader directly, else by asking the leader (POST
// /internal/catalog/schedules, signed with the cluster key).
type raftSchedules struct{ n *Node }

var _ api.ScheduleCatalog = raftSchedules{}

func (r raftSchedules) Apply(ctx context.Context, op api.ScheduleOp) (engine.ScheduleDef, error) {
	id, addr := r.n.admin.Leader()
	if id == r.n.nodeID {
		return r.ApplyLocal(ctx, op)
	}
	if addr == "" {
		return engine.ScheduleDef{}, fmt.Errorf("no raft leader known for the schedule change: %w", engine.ErrNotRunning)
	}
	return r.askLeader(ctx, id, apiURL(r.n.tls != nil, addr), op)
}

func (r raftSchedules) ApplyLocal(ctx context.Context, op api.ScheduleOp) (engine.ScheduleDef, error) {
	cmd, err := scheduleCommand(op)
	if err != nil {
		return engine.ScheduleDef{}, err
	}
	err = r.n.admin.Apply(ctx, cmd)
	var nl *admin.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return engine.ScheduleDef{}, fmt.Errorf("leadership moved during the schedule change: %w", engine.ErrNotRunning)
	case errors.Is(err, admin.ErrScheduleExists):
		return engine.ScheduleDef{}, fmt.Errorf("schedule %q: %w", op.ID, engine.ErrScheduleExists)
	case errors.Is(err, admin.ErrUnknownSchedule):
		return engine.ScheduleDef{}, &engine.NotFoundError{What: "schedule", ID: op.ID}
	case errors.Is(err, admin.ErrOutcomeUnknown):
		return engine.ScheduleDef{}, fmt.Errorf("%w: %v", api.ErrOutcomeUnknown, err)
	case err != nil:
		return engine.ScheduleDef{}, err
	}
	return engineDef(r.n.admin.Catalog().Schedules[op.ID]), nil
}

// scheduleCommand is op as a catalog command.
func scheduleCommand(op api.ScheduleOp) (admin.Command, error) {
	switch op.Op {
	case api.ScheduleOpPut:
		return admin.PutSchedule{ID: op.ID, Spec: op.Spec, Paused: op.Paused}, nil
	case api.ScheduleOpPause, api.ScheduleOpResume:
		return admin.SetSchedulePaused{ID: op.ID, Paused: op.Op == api.ScheduleOpPause}, nil
	case api.ScheduleOpDelete:
		return admin.DeleteSchedule{ID: op.ID}, nil
	}
	return nil, fmt.Errorf("schedule operation %q: %w", op.Op, engine.ErrInvalidArgument)
}

// askLeader sends op to node leader at base and reads the definition.
func (r raftSchedules) askLeader(ctx context.Context, leader, base string, op api.ScheduleOp) (engine.ScheduleDef, error) {
	ctx, cancel := context.WithTimeout(ctx, scheduleOpTimeout)
	defer cancel()
	body, err := json.Marshal(op)
	if err != nil {
		return engine.ScheduleDef{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+api.BasePath+"/internal/catalog/schedules", bytes.NewReader(body))
	if err != nil {
		return engine.ScheduleDef{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	r.n.signNode(req, leader, body)
	res, err := r.n.nodeClient().Do(req)
	if err != nil {
		return engine.ScheduleDef{}, fmt.Errorf("ask the raft leader for the schedule change: %v: %w", err, api.ErrOutcomeUnknown)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return engine.ScheduleDef{}, fmt.Errorf("read the leader's answer: %v: %w", err, api.ErrOutcomeUnknown)
	}
	return leaderAnswer(op, res.StatusCode, raw)
}

// leaderAnswer reads the leader's answer to op.
func leaderAnswer(op api.ScheduleOp, status int, raw []byte) (engine.ScheduleDef, error) {
	switch status {
	case http.StatusOK:
		var v api.ScheduleDefView
		if err := json.Unmarshal(raw, &v); err != nil {
			return engine.ScheduleDef{}, fmt.Errorf("decode the leader's answer: %w", err)
		}
		return v.Def(), nil
	case http.StatusConflict:
		return engine.ScheduleDef{}, fmt.Errorf("schedule %q: %w", op.ID, engine.ErrScheduleExists)
	case http.StatusNotFound:
		return engine.ScheduleDef{}, &engine.NotFoundError{What: "schedule", ID: op.ID}
	case http.StatusBadRequest:
		return engine.ScheduleDef{}, fmt.Errorf("the leader refused the schedule change (%s): %w", bytes.TrimSpace(raw), engine.ErrInvalidArgument)
	}
	return engine.ScheduleDef{}, fmt.Errorf("the leader answered %d (%s): %w", status, bytes.TrimSpace(raw), engine.ErrNotRunning)
}

func (r raftSchedules) Schedules() []engine.ScheduleDef {
	defs := r.n.admin.Catalog().Schedules
	out := make([]engine.ScheduleDef, 0, len(defs))
	for _, id := range slices.Sorted(maps.Keys(defs)) {
		out = append(out, engineDef(defs[id]))
	}
	return out
}

func engineDef(d admin.ScheduleDef) engine.ScheduleDef {
	return engine.ScheduleDef{ID: d.ID, Spec: d.Spec, Paused: d.Paused, Generation: d.Generation, Deleted: d.Deleted,
		Revision: d.Revision}
}

// syncSchedules copies the catalog's schedule definitions into the
// schedules shard when this node serves it (the lowest readable shard, as
// the API routes schedules), so that a definition whose copy a crash left
// undone fires without waiting for a request. Definitions copied before,
// unchanged since, are skipped.
func (n *Node) syncSchedules(ctx context.Context) {
	shards := n.admin.Catalog().Current().Readable
	if len(shards) == 0 || n.mgr == nil {
		return
	}
	e, ok := n.mgr.Engine(slices.Min(shards))
	if !ok {
		clear(n.schedSynced)
		return
	}
	if n.schedSynced == nil {
		n.schedSynced = map[string]engine.ScheduleDef{}
	}
	for _, d := range (raftSchedules{n}).Schedules() {
		if last, ok := n.schedSynced[d.ID]; ok && sameDef(last, d) {
			continue
		}
		if _, err := e.SyncSchedule(ctx, d); err != nil {
			n.log.Warn().Err(err).Str("schedule_id", d.ID).Msg("schedule not copied into its shard")
			continue
		}
		n.schedSynced[d.ID] = d
	}
}

func sameDef(a, b engine.ScheduleDef) bool {
	return a.Generation == b.Generation && a.Paused == b.Paused && a.Deleted == b.Deleted && a.Revision == b.Revision &&
		bytes.Equal(a.Spec, b.Spec)
}
