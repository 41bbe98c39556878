package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// Shard is what the API needs of one shard engine; *engine.Engine is one.
type Shard interface {
	LookupStartKey(ctx context.Context, name, key string) (engine.StartResult, bool, error)
	KnownStartKey(name, key string) bool
	StartWorkflow(ctx context.Context, req engine.StartRequest) (engine.StartResult, error)
	StartAtomic(ctx context.Context, reqs []engine.StartRequest) ([]engine.StartResult, error)
	Signal(ctx context.Context, req engine.SignalRequest) (engine.SignalResult, error)
	SignalWithStart(ctx context.Context, req engine.SignalWithStartRequest) (engine.SignalWithStartResult, error)
	Cancel(ctx context.Context, id uuid.UUID, reason string) (engine.CloseResult, error)
	Terminate(ctx context.Context, id uuid.UUID, reason string) (engine.CloseResult, error)
	Reset(ctx context.Context, req engine.ResetRequest) (engine.ResetResult, error)
	Describe(ctx context.Context, id uuid.UUID) (engine.Description, error)
	Children(ctx context.Context, id uuid.UUID) ([]engine.Child, error)
	Result(ctx context.Context, id uuid.UUID, wait time.Duration) (engine.Outcome, error)
	History(ctx context.Context, id uuid.UUID, q engine.HistoryQuery) (engine.HistoryPage, error)
	Query(ctx context.Context, id uuid.UUID, name string, args json.RawMessage) (json.RawMessage, error)
	Update(ctx context.Context, req engine.UpdateRequest) (engine.UpdateResult, error)
	UpdateWithStart(ctx context.Context, req engine.UpdateWithStartRequest) (engine.UpdateWithStartResult, error)
	LookupWorkflowID(ctx context.Context, name, workflowID string) (engine.SlotHolder, bool, error)
	ClaimPlacement(ctx context.Context, req engine.ClaimRequest) (engine.ClaimResult, error)
	List(ctx context.Context, q engine.ListQuery) (engine.ListPage, error)
	CompleteActivity(ctx context.Context, token string, out json.RawMessage) (engine.AsyncAnswer, error)
	FailActivity(ctx context.Context, token string, info harvest.ErrorInfo) (engine.AsyncAnswer, error)
	HeartbeatActivity(ctx context.Context, token string, details json.RawMessage) (engine.AsyncAnswer, error)
	Owning() bool
}

// Target is where a request for one shard is served: here (Shard set) or
// by the owner at URL.
type Target struct {
	ShardID uint16
	// Shard is set when this node serves the shard right now.
	Shard Shard
	// Owner is the node id this node believes owns the shard ("" unknown).
	Owner string
	// URL is the owner's API base URL ("http://host:port"); empty when
	// the owner is unknown or is this node still acquiring the lease.
	URL string
}

// Router places requests on shards and shards on nodes.
type Router interface {
	// ForStart places a new run: by (name, workflowID) when workflowID is
	// set, else by (name, key) when key is set, else on any writable shard
	// (preferably one served here).
	ForStart(name, workflowID, key string) (Target, error)
	// ForShard routes an existing shard (execution ids carry theirs).
	ForShard(shard uint16) (Target, error)
	// Shards lists every readable shard of the catalog.
	Shards() []uint16
	// MintWorkflowID returns a fresh workflow id that routes, as
	// (name, id), to shard.
	MintWorkflowID(name string, shard uint16) (string, error)
	// Ready is nil once every shard this node should serve is leased.
	Ready() error
	// Place places a routed start, by (name, routingKey), under the
	// current placement epoch, and lists the shards earlier epochs inside
	// the idempotency window placed it on.
	Place(name, routingKey string) (Placement, error)
}

// Placement is where a routed start goes.
type Placement struct {
	// Epoch is the catalog's placement epoch; 0 for a catalog that never
	// changes (no placement checks are needed then).
	Epoch uint64
	// Shard is where the current epoch places the key.
	Shard uint16
	// Earlier lists the other shards epochs inside the window placed the
	// key on: a start claims the key on each before creating a run.
	Earlier []uint16
}

// single routes everything to one shard served here.
type single struct{ s Shard }

// SingleShard is the Router of a one-node, one-shard deployment.
func SingleShard(s Shard) Router { return single{s} }

func (r single) ForStart(string, string, string) (Target, error) { return Target{Shard: r.s}, nil }
func (r single) ForShard(id uint16) (Target, error)              { return Target{ShardID: id, Shard: r.s}, nil }
func (r single) Shards() []uint16                                { return []uint16{0} }
func (r single) MintWorkflowID(string, uint16) (string, error)   { return uuid.NewString(), nil }

func (r single) Place(string, string) (Placement, error) { return Placement{}, nil }

func (r single) Ready() error {
	if !r.s.Owning() {
		return errors.New("the shard is not leased")
	}
	return nil
}
