package store

import (
	"context"

	"github.com/google/uuid"
)

// recordResolvedSQL keeps the first recorded resolution: attempts that
// raced both signal the run that was recorded first.
const recordResolvedSQL = `
	UPDATE harvest_outbox
	   SET request = CASE WHEN request ? 'resolved_execution_id' THEN request
	                      ELSE request || jsonb_build_object('resolved_execution_id', $2::text) END
	 WHERE outbox_id = $1
	RETURNING request->>'resolved_execution_id'`

// RecordResolved records id as the run an outbox row's workflow id
// resolved to, unless an earlier attempt recorded one, and returns the
// one recorded; pgx.ErrNoRows when the row is gone.
func RecordResolved(ctx context.Context, q Querier, rowID int64, id uuid.UUID) (string, error) {
	var got string
	err := q.QueryRow(ctx, recordResolvedSQL, rowID, id.String()).Scan(&got)
	return got, err
}
