// Package pgpool configures the pgx pools of Harvest's shard databases:
// every pool a node (or a test) opens on a shard goes through Configure.
//
//   - uuid.UUID is encoded by pgx's own uuid codec (see
//     RegisterUUID), and json and jsonb scan into json.RawMessage without
//     json.Unmarshal (see RegisterRawJSON).
//   - plan_cache_mode is force_generic_plan unless the DSN sets it. The
//     engine's statements are fixed, and its multi-row ones take their rows
//     as arrays (unnest): PostgreSQL's default mode compares each execution
//     with a generic plan that assumes ten rows per array, finds the real
//     (smaller) batch cheaper, and plans the statement again on every
//     execution, which cost more than running it. Queries whose best plan
//     depends on their arguments (the optional filters of listing) opt out
//     with QueryExecModeSimpleProtocol.
package pgpool

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PlanCacheMode is the plan_cache_mode Configure sets.
const PlanCacheMode = "force_generic_plan"

// Configure applies Harvest's connection settings to cfg.
func Configure(cfg *pgxpool.Config) {
	cfg.AfterConnect = afterConnect
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = PlanCacheMode
	}
}

func afterConnect(_ context.Context, conn *pgx.Conn) error {
	RegisterUUID(conn.TypeMap())
	RegisterRawJSON(conn.TypeMap())
	return nil
}
