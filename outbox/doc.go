// Package outbox starts and signals Harvest workflows from inside the
// application's own database transaction, exactly once.
//
// A business change and the workflow it should start belong together: an
// order row committed with no workflow, or a workflow started for an order
// whose transaction rolled back, is the bug every "call the API after
// COMMIT" integration has. Start and Signal write a row to the table
// harvest_app_outbox in the application's database, with the caller's
// transaction (a pgx.Tx, or anything with Exec), so the row commits or
// rolls back with the business rows. A Relay, a background service the
// application runs against the same database, delivers each committed
// row as a keyed start or keyed signal through a client.Client and marks
// it delivered:
//
//	if err := outbox.Migrate(ctx, pool); err != nil { … }          // once, at boot
//	tx, _ := pool.Begin(ctx)
//	_, _ = tx.Exec(ctx, `INSERT INTO orders …`)
//	_, _ = outbox.Start(ctx, tx, "order", "order-42", map[string]any{"order_id": 42})
//	_ = tx.Commit(ctx)                                              // both, or neither
//
//	relay := outbox.NewRelay(outbox.Config{Pool: pool, Target: client.New(url)})
//	relay.Start(ctx)
//	defer relay.Stop()
//
// Exactly once: the row's idempotency key is the start's (or the signal's)
// Idempotency-Key. A relay that crashes after Harvest answered and before
// its mark committed delivers the row again, and Harvest answers the
// replay with the run the first delivery made (a signal: a duplicate, no
// new event). The row's key must therefore be stable for the business
// fact (the order's id, not a random value), and a start's key lives in
// Harvest for its idempotency window (24 h by default): a row delivered
// later than that after its first delivery could start again.
//
// Delivery: rows are delivered in id order, BatchSize at a time under
// FOR UPDATE SKIP LOCKED (several relays share the table). A definite
// refusal (a 4xx other than 408 and 429: an unknown workflow, a bad input,
// a signal to a closed run) marks the row failed with its error, never
// retried; anything else (a 5xx, a 429, a network error) is retried with
// backoff. Migrate creates the table (migrations/, numbered, recorded in
// harvest_app_outbox_migrations) and is safe to run at every boot.
package outbox
