// Package harvest is the Go SDK of Harvest, a durable workflow engine on
// PostgreSQL whose promise is exactly-once effects under at-least-once
// delivery.
//
// Users declare workflows, activities and signals once, register them on a
// Registry and hand the registry to a node (harvestd) or an engine:
//
//	var ChargeCard = harvest.NewActivity("charge_card",
//		func(ctx *harvest.ActivityContext, in Charge) (Receipt, error) {
//			// Pass the key downstream (e.g. as Stripe's Idempotency-Key):
//			// every retry of this invocation carries the same key.
//			return payments.Charge(ctx, in, ctx.IdempotencyKey().String())
//		},
//		harvest.ActivityOptions{StartToClose: 30 * time.Second,
//			Retry: harvest.Exponential(3, 2*time.Second)})
//
//	var Approved = harvest.NewSignal[Approval]("approved")
//
//	var Order = harvest.NewWorkflow("order",
//		func(ctx harvest.Context, in Charge) (Receipt, error) {
//			receipt, err := ChargeCard.Execute(ctx, in).Get(ctx)
//			if err != nil {
//				return Receipt{}, err
//			}
//			if _, ok, _ := Approved.ReceiveWithTimeout(ctx, time.Hour); !ok {
//				return receipt, harvest.NewNonRetryableError("not_approved", "no approval in time")
//			}
//			return receipt, harvest.Sleep(ctx, time.Minute)
//		})
//
// # Determinism
//
// Workflow functions are re-run against their recorded history on every
// workflow task (deterministic replay). They must only wait through the
// SDK (Future.Get, Sleep, Signal.Receive, Selector.Select, Channel), read time through Context.Now and
// take nondeterministic values through SideEffect. A workflow whose commands
// no longer match its history fails its task with a NonDeterminismError;
// the history is never rewritten.
//
// # Select, coroutines and channels
//
// A Selector (NewSelector) waits on futures, signals and channels at once
// and runs the handler of the first case ready. Go starts a coroutine, and
// Channel (NewChannel, NewBufferedChannel) passes values between
// coroutines. All of it is deterministic: coroutines run one at a time, in
// creation order, until every one is blocked, at the start and after each
// delivered event; when several select cases are ready, the one whose
// event came first in history wins. The run ends when the workflow
// function returns; other coroutines are abandoned.
//
// # Activity idempotency keys
//
// ActivityContext.IdempotencyKey is derived from the execution id and the
// activity's deterministic id: identical across retries, engine restarts,
// duplicate dispatch and replay, distinct for every logical invocation.
// Subkey derives stable child keys for activities that make several calls.
//
// # Replayer
//
// Registry.RunWorkflowTask runs one workflow task over a history and returns
// the new commands. The engine uses it; tests can use it to check that new
// code still replays old histories.
package harvest
