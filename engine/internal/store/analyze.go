package store

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// YoungTables are those of tables that the caller may analyse, had fewer
// than young rows at their last analysis, and have changed by more rows
// than they had (and at least minChanges) since.
func YoungTables(ctx context.Context, q Querier, tables []string, young, minChanges int) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT t FROM unnest($1::text[]) AS t
		  JOIN pg_stat_user_tables s ON s.relid = to_regclass(t)
		  JOIN pg_class c ON c.oid = s.relid
		 WHERE pg_has_role(c.relowner, 'USAGE') -- ANALYZE skips others' tables
		   AND greatest(c.reltuples, 0) < $2
		   AND s.n_mod_since_analyze > greatest(c.reltuples, $3)`,
		tables, young, minChanges)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Analyze analyses tables in one transaction of db, with statistics
// target target.
func Analyze(ctx context.Context, db pgx.Tx, tables []string, target int) error {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = pgx.Identifier{t}.Sanitize()
	}
	if _, err := db.Exec(ctx, `SELECT set_config('default_statistics_target', $1, true)`,
		strconv.Itoa(target)); err != nil {
		return err
	}
	_, err := db.Exec(ctx, "ANALYZE "+strings.Join(names, ", "))
	return err
}
