package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// updateResultSQL reads the first UpdateCompleted event of update $2 in
// the chain of run $1 (migration 029's index): a reset run that applies
// the update again records a second one, and the first answer stands.
const updateResultSQL = `
	SELECT e.execution_id, e.data
	  FROM harvest_events e
	  JOIN harvest_executions x ON x.execution_id = e.execution_id
	 WHERE e.event_type = 'UpdateCompleted' AND e.data->>'update_id' = $2
	   AND coalesce(x.chain_id, x.execution_id) = (SELECT coalesce(y.chain_id, y.execution_id)
	                                                 FROM harvest_executions y WHERE y.execution_id = $1)
	 ORDER BY e.created_at, e.execution_id
	 LIMIT 1`

// UpdateResult reads the result of update updateID in the chain of run
// id: the run that answered it and its UpdateCompleted data; ok is false
// while there is none.
func UpdateResult(ctx context.Context, q Querier, id uuid.UUID, updateID string) (uuid.UUID, json.RawMessage, bool, error) {
	var (
		run  uuid.UUID
		data json.RawMessage
	)
	err := q.QueryRow(ctx, updateResultSQL, id, updateID).Scan(&run, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil, false, nil
	}
	return run, data, err == nil, err
}
