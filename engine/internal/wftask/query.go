package wftask

import (
	"context"
	"encoding/json"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Query answers the query name of run x, running or closed: from the
// run's cached state when the shard holds it current (statecache.go),
// else by reading the whole history (no write, no lock) and replaying it
// through the workflow code (harvest.Registry.RunQuery). The caller
// bounds ctx (Config.QueryTimeout).
func (r *Runner) Query(ctx context.Context, x shardapi.Execution, name string, args json.RawMessage) (json.RawMessage, error) {
	id := x.ExecutionID
	if x.State == shardapi.StateRunning {
		if out, ok, err := r.cachedQuery(id, x.EventCount, name, args); ok {
			return out, err
		}
	}
	history, err := LoadHistory(ctx, r.d.Pool, &store.Exec{ID: id}, 0, -1)
	if err != nil {
		return nil, err
	}
	return r.d.Reg.RunQuery(ctx, harvest.WorkflowTask{
		Info:    harvest.WorkflowInfo{ExecutionID: id.String(), WorkflowName: x.WorkflowName, WorkflowID: x.WorkflowID},
		History: history,
	}, name, args)
}
