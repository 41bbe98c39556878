// Package demo holds the demo workflows harvestd registers and the fake
// downstream services they call. The fakes deduplicate by idempotency key
// the way Stripe or an email provider does, and record every call, so tests
// can prove exactly-once effects under at-least-once activities.
//
//   - onboarding: one activity creates a user through the fake user
//     database and sends a welcome email through the fake mailer, using
//     the subkeys "db" and "email" of the activity's idempotency key.
//   - order: charges a card through the fake payment service, waits for
//     an "approved" signal (with a timeout), sleeps, completes.
//   - parent_chain: starts N noop_chain children at once (child
//     workflows) and returns the sum of their results.
//   - approver: approves an order run by sending it "approved" from
//     workflow code (harvest.SignalExternal).
//   - tally: counts the items of its input, a JSON list (what a batch
//     start's run gets), in one activity.
package demo
