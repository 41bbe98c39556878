package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/shardapi"
)

// The admission gates, harvest_gates: one row per gate, in every shard's
// database (each shard's engine reads its own).

// CloseGate stores gate g, or replaces the gate of the same id.
func CloseGate(ctx context.Context, q Querier, g shardapi.Gate) error {
	_, err := q.Exec(ctx, `
		INSERT INTO harvest_gates (gate_id, scope_kind, scope_value, reason, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (gate_id) DO UPDATE SET scope_kind = EXCLUDED.scope_kind, scope_value = EXCLUDED.scope_value,
		       reason = EXCLUDED.reason, expires_at = EXCLUDED.expires_at`,
		g.ID, g.ScopeKind, g.ScopeValue, g.Reason, g.CreatedAt, g.ExpiresAt)
	if err != nil {
		return fmt.Errorf("close gate %s: %w", g.ID, err)
	}
	return nil
}

// OpenGate deletes gate id; false if it was absent.
func OpenGate(ctx context.Context, q Querier, id string) (bool, error) {
	tag, err := q.Exec(ctx, `DELETE FROM harvest_gates WHERE gate_id = $1`, id)
	if err != nil {
		return false, fmt.Errorf("open gate %s: %w", id, err)
	}
	return tag.RowsAffected() > 0, nil
}

// ListGates reads the unexpired gates, oldest first.
func ListGates(ctx context.Context, q Querier) ([]shardapi.Gate, error) {
	rows, err := q.Query(ctx, `
		SELECT gate_id, scope_kind, scope_value, reason, created_at, expires_at FROM harvest_gates
		 WHERE expires_at IS NULL OR expires_at > now() ORDER BY created_at, gate_id`)
	if err != nil {
		return nil, fmt.Errorf("list gates: %w", err)
	}
	gates, err := pgx.CollectRows(rows, pgx.RowToStructByPos[shardapi.Gate])
	if err != nil {
		return nil, fmt.Errorf("list gates: %w", err)
	}
	return gates, nil
}
