// Package activitystore keeps the HTTP activities registered at run time
// on a node without a raft catalog (harvestd dev) in its shard database,
// table harvest_http_activities (migration 018). The node is the table's
// only writer: Load reads it once, and every change goes to the database
// first, then to the in-memory map the engine resolves attempts from.
package activitystore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/httpactivity"
)

// Store is the HTTP activity table of one database.
type Store struct {
	pool   *pgxpool.Pool
	mu     sync.RWMutex
	byName map[string]httpactivity.Config
}

// Load reads every activity of the database behind pool.
func Load(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	rows, err := pool.Query(ctx, `SELECT config FROM harvest_http_activities`)
	if err != nil {
		return nil, fmt.Errorf("load http activities: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (httpactivity.Config, error) {
		var a httpactivity.Config
		err := row.Scan(&a)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("load http activities: %w", err)
	}
	s := &Store{pool: pool, byName: make(map[string]httpactivity.Config, len(list))}
	for _, a := range list {
		s.byName[a.Name] = a
	}
	return s, nil
}

// HTTPActivity returns the activity name (a copy).
func (s *Store) HTTPActivity(name string) (httpactivity.Config, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.byName[name]
	return a.Clone(), ok
}

// HTTPActivities returns every activity by name.
func (s *Store) HTTPActivities(context.Context) ([]httpactivity.Config, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]httpactivity.Config, 0, len(s.byName))
	for _, name := range slices.Sorted(maps.Keys(s.byName)) {
		out = append(out, s.byName[name].Clone())
	}
	return out, nil
}

// CreateHTTPActivity stores a (registered now unless set) and returns
// what is stored. Registering an activity held with the same config
// changes nothing; another config under the same name is
// httpactivity.ErrExists.
func (s *Store) CreateHTTPActivity(ctx context.Context, a httpactivity.Config) (httpactivity.Config, error) {
	if err := a.Validate(); err != nil {
		return httpactivity.Config{}, err
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = time.Now().UTC()
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return httpactivity.Config{}, fmt.Errorf("encode http activity %s: %w", a.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var stored httpactivity.Config
	err = s.pool.QueryRow(ctx, `
		INSERT INTO harvest_http_activities (name, config, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
		RETURNING config`, a.Name, raw, a.CreatedAt).Scan(&stored)
	if err != nil {
		return httpactivity.Config{}, fmt.Errorf("store http activity %s: %w", a.Name, err)
	}
	if !stored.Same(a) {
		return httpactivity.Config{}, fmt.Errorf("http activity %s: %w", a.Name, httpactivity.ErrExists)
	}
	s.byName[a.Name] = stored
	return stored.Clone(), nil
}

// DeleteHTTPActivity deletes the activity name; httpactivity.ErrUnknown
// when there is none.
func (s *Store) DeleteHTTPActivity(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tag, err := s.pool.Exec(ctx, `DELETE FROM harvest_http_activities WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("delete http activity %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("http activity %s: %w", name, httpactivity.ErrUnknown)
	}
	delete(s.byName, name)
	return nil
}
