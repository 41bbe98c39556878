package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/harvestd/harvest/engine/internal/store"
)

// gateRefresh is how long a shard engine trusts its gate cache;
// gateStale is how long it keeps using a cache it cannot refresh before
// failing closed.
const (
	gateRefresh = time.Second
	gateStale   = 10 * time.Second
)

// CloseGate stores (or replaces) a gate in one shard database.
func CloseGate(ctx context.Context, db store.Querier, g Gate) error {
	switch g.ScopeKind {
	case GateCluster:
		g.ScopeValue = ""
	case GateWorkflowName, GateShard:
		if g.ScopeValue == "" {
			return fmt.Errorf("gate scope %s needs a value: %w", g.ScopeKind, ErrInvalidArgument)
		}
	default:
		return fmt.Errorf("gate scope %q (want cluster, workflow_name or shard): %w", g.ScopeKind, ErrInvalidArgument)
	}
	return store.CloseGate(ctx, db, g)
}

// OpenGate deletes a gate from one shard database; false if it was absent.
func OpenGate(ctx context.Context, db store.Querier, id string) (bool, error) {
	return store.OpenGate(ctx, db, id)
}

// ListGates reads the unexpired gates of one shard database.
func ListGates(ctx context.Context, db store.Querier) ([]Gate, error) {
	return store.ListGates(ctx, db)
}

// gateCache holds a shard's gates for gateRefresh.
type gateCache struct {
	mu       sync.Mutex
	gates    []Gate
	loadedAt time.Time
}

// checkGate refuses a fresh start of workflow name if a gate covers it.
// It fails closed when the gates cannot be read for gateStale.
func (e *Engine) checkGate(ctx context.Context, name string) error {
	gates, err := e.currentGates(ctx)
	if err != nil {
		return &GateError{GateID: "unavailable", Reason: "admission gates cannot be read: " + err.Error()}
	}
	shard := strconv.Itoa(int(e.cfg.ShardID))
	now := time.Now()
	for _, g := range gates {
		if g.ExpiresAt != nil && !g.ExpiresAt.After(now) {
			continue
		}
		if g.ScopeKind == GateCluster || (g.ScopeKind == GateWorkflowName && g.ScopeValue == name) ||
			(g.ScopeKind == GateShard && g.ScopeValue == shard) {
			return &GateError{GateID: g.ID, Reason: g.Reason}
		}
	}
	return nil
}

func (e *Engine) currentGates(ctx context.Context) ([]Gate, error) {
	c := &e.gates
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.loadedAt) < gateRefresh {
		return c.gates, nil
	}
	gates, err := ListGates(ctx, e.pool)
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
func (e *Engine) InvalidateGates() {
	e.gates.mu.Lock()
	e.gates.loadedAt = time.Time{}
	e.gates.mu.Unlock()
}

// CloseGate closes gate in this shard's own database: the gate store of a
// one-shard deployment (a cluster writes every shard's database).
func (e *Engine) CloseGate(ctx context.Context, g Gate) error {
	defer e.InvalidateGates()
	return CloseGate(ctx, e.pool, g)
}

// OpenGate lifts gate id in this shard's own database.
func (e *Engine) OpenGate(ctx context.Context, id string) (bool, error) {
	defer e.InvalidateGates()
	return OpenGate(ctx, e.pool, id)
}

// ListGates lists the gates in this shard's own database.
func (e *Engine) ListGates(ctx context.Context) ([]Gate, error) {
	return ListGates(ctx, e.pool)
}
