package store

import "github.com/jackc/pgx/v5"

// QueueFireOutcome queues the record of a schedule fire's answer in its
// fires row (gone if the schedule was deleted meanwhile: then nothing is
// recorded): its outcome, why, and the run it started ("" for none).
func QueueFireOutcome(b *pgx.Batch, key, outcome, reason, executionID string) {
	b.Queue(`
		UPDATE harvest_schedule_fires SET outcome = $2, reason = $3, execution_id = nullif($4, '')::uuid, updated_at = now()
		 WHERE fire_key = $1`, key, outcome, reason, executionID)
}
