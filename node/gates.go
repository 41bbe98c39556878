package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
)

// nodeGates stores admission gates in every shard database of the catalog,
// where each shard's engine reads them (cached for a second, failing
// closed when they cannot be read). Writes go to all shards; a shard that
// cannot be written is reported and the write can be retried.
type nodeGates struct{ n *Node }

var _ api.Gates = nodeGates{}

func (g nodeGates) CloseGate(ctx context.Context, gate engine.Gate) error {
	return g.each(ctx, func(ctx context.Context, shard uint16, db dbConn) error {
		return engine.CloseGate(ctx, db, gate)
	})
}

func (g nodeGates) OpenGate(ctx context.Context, id string) (bool, error) {
	lifted := false
	err := g.each(ctx, func(ctx context.Context, shard uint16, db dbConn) error {
		ok, err := engine.OpenGate(ctx, db, id)
		lifted = lifted || ok
		return err
	})
	return lifted, err
}

// ListGates reads the gates of the first reachable shard (all shards hold
// the same gates).
func (g nodeGates) ListGates(ctx context.Context) ([]engine.Gate, error) {
	var errs []error
	for id, pool := range g.n.poolSnapshot() {
		gates, err := engine.ListGates(ctx, pool)
		if err == nil {
			return gates, nil
		}
		errs = append(errs, fmt.Errorf("shard %d: %w", id, err))
	}
	return nil, errors.Join(errs...)
}

// dbConn is a shard database handle.
type dbConn = *pgxpool.Pool

func (g nodeGates) each(ctx context.Context, fn func(context.Context, uint16, dbConn) error) error {
	var errs []error
	for id, pool := range g.n.poolSnapshot() {
		if err := fn(ctx, id, pool); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", id, err))
		}
	}
	if mgr := g.n.mgr; mgr != nil {
		for _, s := range mgr.Owned() {
			if e, ok := mgr.Engine(s); ok {
				e.InvalidateGates()
			}
		}
	}
	return errors.Join(errs...)
}
