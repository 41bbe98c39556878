package intake

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// gateRefresh is how long a shard engine trusts its gate cache;
// gateStale is how long it keeps using a cache it cannot refresh before
// failing closed.
const (
	gateRefresh = time.Second
	gateStale   = 10 * time.Second
)

// CloseGate stores (or replaces) a gate in one shard database.
func CloseGate(ctx context.Context, db store.Querier, g shardapi.Gate) error {
	switch g.ScopeKind {
	case shardapi.GateCluster:
		g.ScopeValue = ""
	case shardapi.GateWorkflowName, shardapi.GateShard:
		if g.ScopeValue == "" {
			return fmt.Errorf("gate scope %s needs a value: %w", g.ScopeKind, shardapi.ErrInvalidArgument)
		}
	default:
		return fmt.Errorf("gate scope %q (want cluster, workflow_name or shard): %w", g.ScopeKind, shardapi.ErrInvalidArgument)
	}
	return store.CloseGate(ctx, db, g)
}

// OpenGate deletes a gate from one shard database; false if it was absent.
func OpenGate(ctx context.Context, db store.Querier, id string) (bool, error) {
	return store.OpenGate(ctx, db, id)
}

// ListGates reads the unexpired gates of one shard database.
func ListGates(ctx context.Context, db store.Querier) ([]shardapi.Gate, error) {
	return store.ListGates(ctx, db)
}

// gateCache holds a shard's gates for gateRefresh.
type gateCache struct {
	mu       sync.Mutex
	gates    []shardapi.Gate
	loadedAt time.Time
}

// checkGate refuses a fresh start of workflow name if a gate covers it.
// It fails closed when the gates cannot be read for gateStale.
func (in *Intake) checkGate(ctx context.Context, name string) error {
	gates, err := in.currentGates(ctx)
	if err != nil {
		return &shardapi.GateError{GateID: "unavailable", Reason: "admission gates cannot be read: " + err.Error()}
	}
	shard := strconv.Itoa(int(in.d.ShardID))
	now := time.Now()
	for _, g := range gates {
		if g.ExpiresAt != nil && !g.ExpiresAt.After(now) {
			continue
		}
		if g.ScopeKind == shardapi.GateCluster || (g.ScopeKind == shardapi.GateWorkflowName && g.ScopeValue == name) ||
			(g.ScopeKind == shardapi.GateShard && g.ScopeValue == shard) {
			return &shardapi.GateError{GateID: g.ID, Reason: g.Reason}
		}
	}
	return nil
}

func (in *Intake) currentGates(ctx context.Context) ([]shardapi.Gate, error) {
	c := &in.gates
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.loadedAt) < gateRefresh {
		return c.gates, nil
	}
	gates, err := ListGates(ctx, in.d.Pool)
	if err != nil {
		if !c.loadedAt.IsZero() && time.Since(c.loadedAt) < gateStale && !errors.Is(err, context.Canceled) {
			return c.gates, nil
		}
		return nil, err
	}
	c.gates, c.loadedAt = gates, time.Now()
	return gates, nil
}

// InvalidateGates makes the next check re-read the gates (after this node
// changed them).
func (in *Intake) InvalidateGates() {
	in.gates.mu.Lock()
	in.gates.loadedAt = time.Time{}
	in.gates.mu.Unlock()
}

// CloseGate closes gate in this shard's own database: the gate store of a
// one-shard deployment (a cluster writes every shard's database).
func (in *Intake) CloseGate(ctx context.Context, g shardapi.Gate) error {
	defer in.InvalidateGates()
	return CloseGate(ctx, in.d.Pool, g)
}

// OpenGate lifts gate id in this shard's own database.
func (in *Intake) OpenGate(ctx context.Context, id string) (bool, error) {
	defer in.InvalidateGates()
	return OpenGate(ctx, in.d.Pool, id)
}

// ListGates lists the gates in this shard's own database.
func (in *Intake) ListGates(ctx context.Context) ([]shardapi.Gate, error) {
	return ListGates(ctx, in.d.Pool)
}
