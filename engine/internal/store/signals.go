package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The signal ledger, harvest_signals: one row per signal delivered, whose
// idempotency key, if any, is unique within the run's continue-as-new
// chain (the keyed signal's dedup).

// signalKeySeenSQL looks a signal key up in the chain of run $1.
const signalKeySeenSQL = `
	SELECT EXISTS (
	       SELECT 1 FROM harvest_executions x
	         JOIN harvest_signals s ON coalesce(s.chain_id, s.execution_id) = coalesce(x.chain_id, x.execution_id)
	        WHERE x.execution_id = $1 AND s.idempotency_key = $2)`

// QueueSignalKeySeen queues the look-up of signal key key in the chain
// of run id; seen is set once the batch has run.
func QueueSignalKeySeen(b *pgx.Batch, id uuid.UUID, key string, seen *bool) {
	b.Queue(signalKeySeenSQL, id, key).QueryRow(func(row pgx.Row) error { return row.Scan(seen) })
}

// SignalKeySeen looks signal key key up in the chain of run id.
func SignalKeySeen(ctx context.Context, q Querier, id uuid.UUID, key string) (bool, error) {
	var seen bool
	if err := q.QueryRow(ctx, signalKeySeenSQL, id, key).Scan(&seen); err != nil {
		return false, fmt.Errorf("look up signal key: %w", err)
	}
	return seen, nil
}

// ChainKey is a signal key within a continue-as-new chain (Chain is the
// chain's first run).
type ChainKey struct {
	Chain uuid.UUID
	Key   string
}

// QueueSignalKeysSeen queues the look-up of the signal keys keys[i] in
// the chains of runs ids[i]; each key found is set in seen.
func QueueSignalKeysSeen(b *pgx.Batch, ids []uuid.UUID, keys []string, seen map[ChainKey]bool) {
	b.Queue(`
			SELECT DISTINCT coalesce(x.chain_id, x.execution_id), r.k
			  FROM unnest($1::uuid[], $2::text[]) AS r(id, k)
			  JOIN harvest_executions x ON x.execution_id = r.id
			  JOIN harvest_signals s ON coalesce(s.chain_id, s.execution_id) = coalesce(x.chain_id, x.execution_id)
			                        AND s.idempotency_key = r.k`, ids, keys).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var k ChainKey
				if err := rows.Scan(&k.Chain, &k.Key); err != nil {
					return err
				}
				seen[k] = true
			}
			return rows.Err()
		})
}

// QueueInsertSignal queues one ledger row: the signal name of run id
// (of chain chain), its key ("" for none) and the event it appends.
func QueueInsertSignal(b *pgx.Batch, id, chain uuid.UUID, name, key string, eventID int64) {
	var k any
	if key != "" {
		k = key
	}
	b.Queue(`
		INSERT INTO harvest_signals (execution_id, chain_id, signal_name, idempotency_key, event_id)
		VALUES ($1, $2, $3, $4, $5)`, id, chain, name, k, eventID)
}

// SignalRows are the ledger rows of a batch of signals, inserted in one
// statement.
type SignalRows struct {
	ids      []uuid.UUID
	chains   []uuid.UUID
	names    []string
	keys     []*string
	eventIDs []int64
}

// Add adds the ledger row of signal name to run id (of chain chain), its
// key ("" for none) and the event it appends.
func (r *SignalRows) Add(id, chain uuid.UUID, name, key string, eventID int64) {
	r.ids, r.chains = append(r.ids, id), append(r.chains, chain)
	r.names = append(r.names, name)
	var k *string
	if key != "" {
		k = &key
	}
	r.keys = append(r.keys, k)
	r.eventIDs = append(r.eventIDs, eventID)
}

// Queue queues the insert of the rows added, if any.
func (r *SignalRows) Queue(b *pgx.Batch) {
	if len(r.ids) == 0 {
		return
	}
	b.Queue(`
		INSERT INTO harvest_signals (execution_id, chain_id, signal_name, idempotency_key, event_id)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bigint[])`,
		r.ids, r.chains, r.names, r.keys, r.eventIDs)
}

// FindSignalKey finds the run of workflow name/id whose ledger holds
// signal key key (the first such signal); found is false when none does.
func FindSignalKey(ctx context.Context, q Querier, name, workflowID, key string) (id uuid.UUID, state string, found bool, err error) {
	err = q.QueryRow(ctx, `
		SELECT e.execution_id, e.state
		  FROM harvest_signals s JOIN harvest_executions e ON e.execution_id = s.execution_id
		 WHERE e.workflow_name = $1 AND e.workflow_id = $2 AND s.idempotency_key = $3
		 ORDER BY s.signal_id LIMIT 1`, name, workflowID, key).
		Scan(&id, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, "", false, nil
	}
	if err != nil {
		return uuid.Nil, "", false, fmt.Errorf("find signal key: %w", err)
	}
	return id, state, true, nil
}
