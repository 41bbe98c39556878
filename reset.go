package harvest

// Resets: the engine replaces a chain's current run by a new run that
// replays a prefix of one of its runs (WorkflowStartedData.KeyBase,
// ResetFrom, ResetEventID). The new run derives its keys (activities,
// children's starts, external signals) from the key base, so a step
// re-executed after the point carries the key it had.

// ResetKeyPrefix starts the start claim key of a reset: the prefix, the
// chain and the request's idempotency key (ResetKey).
const ResetKeyPrefix = ReservedPrefix + "reset:"

// ResetKey is the start claim key of the reset of chain under key.
func ResetKey(chain, key string) string { return ResetKeyPrefix + chain + ":" + key }
