// Package harvesttest runs your workflows in tests: a real engine on a
// private PostgreSQL database, with a test clock that skips workflow time
// and fakes for activities.
//
//	func TestRemind(t *testing.T) {
//		env := harvesttest.New(t, reg) // reg holds your workflows and activities
//		env.ReplaceActivity("send_email", harvesttest.Fake(
//			func(ctx *harvest.ActivityContext, to string) (string, error) { return "sent", nil }))
//		run := env.Start("remind", Reminder{To: "ada@example.com", After: 24 * time.Hour})
//		env.SkipTime(run.ExecutionID) // the day passes at once
//		var out string
//		env.Output(run.ExecutionID, &out)
//		require.Equal(t, "sent", out)
//	}
//
// Every Env method fails the test (t.Fatal) on an error, so it returns
// only what the test asserts on. Call them from the test's goroutine.
//
// # The database
//
// New creates a database of its own for the test (cloned from a migrated
// template) and drops it when the test ends, so tests may run in parallel.
// The databases live on one PostgreSQL server per test binary: the server
// HARVEST_TEST_DSN names (it must allow CREATE DATABASE), or else a
// private one started on first use from the PostgreSQL binaries installed
// on the machine (initdb and postgres on PATH or under
// /usr/lib/postgresql/*/bin), in a temporary directory, listening on a
// unix socket only. It is the harness Harvest's own tests use. New skips
// the test, saying why, when there is neither; any other setup failure
// fails it. The private server shuts down when the test binary exits.
//
// # The engine
//
// The Env runs one engine.Engine for one shard, as harvestd does, with
// everything durable: workflow tasks replay their history, activities run
// with their retry policies and timeouts, start and signal idempotency keys
// deduplicate inside the window. WithConfig changes the engine's
// configuration, WithTimeout the bound of every wait (TimeoutDefault).
// Start, Signal, Result, Output, Describe and History wrap the engine's
// calls; Engine returns it for the rest.
//
// # The test clock
//
// The engine's workflow time comes from the Env's Clock. It starts at real
// time and runs with it; Advance (or SkipTime) moves it ahead, and what
// came due then runs at once, with no real waiting:
//
//   - durable timers: Sleep, NewTimer, and the timeout of
//     Signal.ReceiveWithTimeout;
//   - activity retries: the next attempt is due the policy's backoff after
//     the failure, both recorded in workflow time (Describe's
//     PendingActivity.LastFailedAt and ScheduledAt);
//   - activity timeouts: start-to-close, schedule-to-close and heartbeat;
//   - delayed starts.
//
// History events are stamped with workflow time, so harvest.Context.Now
// follows the clock: a workflow that sleeps 24 hours sees its Now move 24
// hours (plus the real time the test took). The clock only goes forward.
//
// Everything the engine uses to stay correct rather than to schedule
// workflows stays on the database's clock: the shard lease, activity task
// locks, start idempotency claims and their window, completion callbacks,
// and a run's created, updated and completed times. Advancing the clock by
// a day therefore neither expires a start key nor steals a lease.
//
// NextTimer waits until a run has a timer due later and returns it;
// SkipTime waits until a run waits on time (a timer or a retry's backoff)
// and advances the clock to the earliest; WaitFor waits for any condition
// on Describe. Each waits by reading the run until it holds or the Env's
// timeout passes, and fails the test if the run closes first.
//
// # Fake activities
//
// ReplaceActivity makes the engine run a fake instead of a registered
// activity (Fake adapts a typed function). Replace it before starting the
// runs that call it. The fake is called exactly as the real activity
// would be: with the same ActivityContext, the same idempotency key (the
// same across retries, different per invocation), under the activity's
// retry policy and timeouts.
//
// # Children and signals to other workflows
//
// Child workflows (Workflow.Execute), harvest.SignalExternal and
// harvest.SignalExternalWorkflow work in an Env as on a node: the engine's
// outbox resolves workflow ids and performs the keyed starts and signals
// on the Env's one shard, so a test starts the parent, waits for
// its children (Describe's Children, with WaitFor) and drives them like
// any run.
package harvesttest
