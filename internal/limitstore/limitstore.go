// Package limitstore keeps the flow control limits set at run time on a
// node without a raft catalog (harvestd dev) in its shard database,
// table harvest_flow_limits (migration 024). The node is the table's
// only writer: Load reads it once, and every change goes to the database
// first, then to the in-memory copy the engines read (Current).
package limitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/flowlimit"
)

// Snapshot is the limits at one version, by flowlimit.Key. It is shared:
// it must not be modified.
type Snapshot struct {
	// Version counts the changes since Load.
	Version uint64
	Limits  map[string]flowlimit.Limit
}

// Store is the limit table of one database.
type Store struct {
	pool *pgxpool.Pool
	mu   sync.Mutex // serialises the changes
	cur  atomic.Pointer[Snapshot]
}

// Load reads every limit of the database behind pool.
func Load(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	rows, err := pool.Query(ctx, `SELECT config FROM harvest_flow_limits`)
	if err != nil {
		return nil, fmt.Errorf("load flow limits: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (flowlimit.Limit, error) {
		var l flowlimit.Limit
		err := row.Scan(&l)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("load flow limits: %w", err)
	}
	limits := make(map[string]flowlimit.Limit, len(list))
	for _, l := range list {
		limits[l.Key()] = l
	}
	s := &Store{pool: pool}
	s.cur.Store(&Snapshot{Limits: limits})
	return s, nil
}

// Current is the limits now, without a lock.
func (s *Store) Current() *Snapshot { return s.cur.Load() }

// Limits lists every limit by kind, then name.
func (s *Store) Limits(context.Context) ([]flowlimit.Limit, error) {
	return flowlimit.Sorted(s.Current().Limits), nil
}

// SetLimit stores l (updated now unless set), replacing the limit of its
// kind and name, and returns what is stored. The same limit again
// changes nothing. An invalid l is flowlimit.ErrInvalid.
func (s *Store) SetLimit(ctx context.Context, l flowlimit.Limit) (flowlimit.Limit, error) {
	if err := l.Validate(); err != nil {
		return flowlimit.Limit{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.Current().Limits[l.Key()]; ok && old.Same(l) {
		return old, nil
	}
	if l.UpdatedAt.IsZero() {
		l.UpdatedAt = time.Now().UTC()
	}
	raw, err := json.Marshal(l)
	if err != nil {
		return flowlimit.Limit{}, fmt.Errorf("encode %s limit %s: %w", l.Kind, l.Name, err)
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO harvest_flow_limits (kind, name, config, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind, name) DO UPDATE SET config = EXCLUDED.config, updated_at = EXCLUDED.updated_at`,
		l.Kind, l.Name, raw, l.UpdatedAt)
	if err != nil {
		return flowlimit.Limit{}, fmt.Errorf("store %s limit %s: %w", l.Kind, l.Name, err)
	}
	s.publish(func(m map[string]flowlimit.Limit) { m[l.Key()] = l })
	return l, nil
}

// DeleteLimit deletes the limit of kind and name; flowlimit.ErrUnknown
// when there is none.
func (s *Store) DeleteLimit(ctx context.Context, kind flowlimit.Kind, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tag, err := s.pool.Exec(ctx, `DELETE FROM harvest_flow_limits WHERE kind = $1 AND name = $2`, kind, name)
	if err != nil {
		return fmt.Errorf("delete %s limit %s: %w", kind, name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s limit %s: %w", kind, name, flowlimit.ErrUnknown)
	}
	s.publish(func(m map[string]flowlimit.Limit) { delete(m, flowlimit.Key(kind, name)) })
	return nil
}

// publish stores the next version: a copy of the current limits changed
// by change. s.mu is held.
func (s *Store) publish(change func(map[string]flowlimit.Limit)) {
	cur := s.Current()
	next := maps.Clone(cur.Limits)
	change(next)
	s.cur.Store(&Snapshot{Version: cur.Version + 1, Limits: next})
}
