package outbox_test

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/outbox"
)

// An order and the start of its workflow commit together, and a relay
// delivers the start once.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@localhost/app")
	if err != nil {
		panic(err)
	}
	if err := outbox.Migrate(ctx, pool); err != nil {
		panic(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		panic(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id, amount) VALUES ($1, $2)`, 42, 1200); err != nil {
		panic(err)
	}
	if _, err := outbox.Start(ctx, tx, "order", "order-42", map[string]any{"order_id": "o-42"}); err != nil {
		panic(err)
	}
	if err := tx.Commit(ctx); err != nil {
		panic(err)
	}
	relay, err := outbox.NewRelay(outbox.Config{Pool: pool, Target: client.New("http://127.0.0.1:7233")})
	if err != nil {
		panic(err)
	}
	relay.Start(ctx)
	defer relay.Stop()
}
