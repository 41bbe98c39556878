package api

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// Shard is what the API needs of one shard engine; *engine.Engine is one.
type Shard interface {
	LookupStartKey(ctx context.Context, name, key string) (engine.StartResult, bool, error)
	StartWorkflow(ctx context.Context, req engine.StartRequest) (engine.StartResult, error)
	Signal(ctx context.Context, req engine.SignalRequest) (engine.SignalResult, error)
	SignalWithStart(ctx context.Context, req engine.SignalWithStartRequest) (engine.SignalWithStartResult, error)
	Cancel(ctx context.Context, id uuid.UUID, reason string) (engine.CloseResult, error)
	Terminate(ctx context.Context, id uuid.UUID, reason string) (engine.CloseResult, error)
	Describe(ctx context.Context, id uuid.UUID) (engine.Description, error)
	Result(ctx context.Context, id uuid.UUID, wait time.Duration) (engine.Execution, error)
	History(ctx context.Context, id uuid.UUID, q engine.HistoryQuery) (engine.HistoryPage, error)
	List(ctx context.Context, q engine.ListQuery) (engine.ListPage, error)
	Owning() bool
}

// Router picks the shard that serves a request.
type Router interface {
	// ForStart is the shard of a new placement: routed by (name,
	// workflowID) when workflowID is set, else by (name, key).
	ForStart(name, workflowID, key string) (Shard, error)
	// ForExecution is the shard an execution id was minted on.
	ForExecution(id uuid.UUID) (Shard, error)
	// All lists the shards served here (for list and readiness).
	All() []Shard
}

// single routes everything to one shard.
type single struct{ s Shard }

// SingleShard is the Router of a one-shard node.
func SingleShard(s Shard) Router { return single{s} }

func (r single) ForStart(string, string, string) (Shard, error) { return r.s, nil }
func (r single) ForExecution(uuid.UUID) (Shard, error)          { return r.s, nil }
func (r single) All() []Shard                                   { return []Shard{r.s} }
