// Package webhookstore keeps the webhook receivers of a node without a
// raft catalog (harvestd dev) in its shard database, table
// harvest_webhooks (migration 014). The node is the table's only writer:
// Load reads it once, and every change goes to the database first, then
// to the in-memory map deliveries are verified against.
package webhookstore

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

	"github.com/harvestd/harvest/webhook"
)

// Store is the webhook table of one database.
type Store struct {
	pool *pgxpool.Pool
	mu   sync.RWMutex
	byID map[string]webhook.Config
}

// Load reads every receiver of the database behind pool.
func Load(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	rows, err := pool.Query(ctx, `SELECT config FROM harvest_webhooks`)
	if err != nil {
		return nil, fmt.Errorf("load webhooks: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (webhook.Config, error) {
		var w webhook.Config
		err := row.Scan(&w)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("load webhooks: %w", err)
	}
	s := &Store{pool: pool, byID: make(map[string]webhook.Config, len(list))}
	for _, w := range list {
		s.byID[w.Name] = w
	}
	return s, nil
}

// Webhook returns the receiver name.
func (s *Store) Webhook(name string) (webhook.Config, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	w, ok := s.byID[name]
	return w, ok, nil
}

// Webhooks returns every receiver by name.
func (s *Store) Webhooks(context.Context) ([]webhook.Config, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]webhook.Config, 0, len(s.byID))
	for _, name := range slices.Sorted(maps.Keys(s.byID)) {
		out = append(out, s.byID[name])
	}
	return out, nil
}

// CreateWebhook stores w (created now unless set) and returns what is
// stored. Putting a receiver held with the same config changes nothing;
// another config under the same name is webhook.ErrExists.
func (s *Store) CreateWebhook(ctx context.Context, w webhook.Config) (webhook.Config, error) {
	if err := w.Validate(); err != nil {
		return webhook.Config{}, err
	}
	if w.CreatedAt.IsZero() {
		w.CreatedAt = time.Now().UTC()
	}
	raw, err := json.Marshal(w)
	if err != nil {
		return webhook.Config{}, fmt.Errorf("encode webhook %s: %w", w.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var stored webhook.Config
	err = s.pool.QueryRow(ctx, `
		INSERT INTO harvest_webhooks (name, config, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
		RETURNING config`, w.Name, raw, w.CreatedAt).Scan(&stored)
	if err != nil {
		return webhook.Config{}, fmt.Errorf("store webhook %s: %w", w.Name, err)
	}
	if !stored.Same(w) {
		return webhook.Config{}, fmt.Errorf("webhook %s: %w", w.Name, webhook.ErrExists)
	}
	s.byID[w.Name] = stored
	return stored, nil
}

// DeleteWebhook deletes the receiver name; webhook.ErrUnknown when there
// is none.
func (s *Store) DeleteWebhook(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tag, err := s.pool.Exec(ctx, `DELETE FROM harvest_webhooks WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook %s: %w", name, webhook.ErrUnknown)
	}
	delete(s.byID, name)
	return nil
}
