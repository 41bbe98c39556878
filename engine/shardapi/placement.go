package shardapi

import "fmt"

// Placement says under which catalog placement epoch a start was placed
// on this shard, and by which routing key (the workflow id when the
// caller sent one, else the idempotency key). A start with a Placement
// takes the key's placement lock and is refused with a MovedError when a
// start placed under a newer epoch has already claimed the key here for
// another shard (see ClaimPlacement). Nil means no placement check: one
// shard, or a static catalog that never moves keys.
type Placement struct {
	Epoch      uint64
	RoutingKey string
}

// MovedError refuses a start placed under an older placement epoch than
// a claim this shard holds for its routing key: the key belongs to Shard
// since Epoch. The caller re-places the start with a catalog at least
// that new (HTTP 503, retry).
type MovedError struct {
	Shard uint16
	Epoch uint64
}

func (e *MovedError) Error() string {
	return fmt.Sprintf("the key was claimed for shard %d by placement epoch %d", e.Shard, e.Epoch)
}

// ClaimRequest claims a routing key on a shard an earlier placement epoch
// placed it on, for the shard the current epoch places it on.
type ClaimRequest struct {
	WorkflowName string
	// WorkflowID and IdempotencyKey are looked up as a start would; the
	// routing key is WorkflowID when set, else IdempotencyKey.
	WorkflowID     string
	IdempotencyKey string
	// Epoch is the placement epoch of the claiming start; Target the
	// shard it places the key on.
	Epoch  uint64
	Target uint16
}

// ClaimResult is what a claim found. At most one of Claim, Holder and
// Moved is set; none means the key is now redirected to the target.
type ClaimResult struct {
	// Claim is a live start claim of the idempotency key here: the start
	// is a replay of it.
	Claim *StartResult
	// Holder is the run holding the workflow id here: the start is
	// decided on this shard.
	Holder *SlotHolder
	// Moved: a newer epoch already claimed the key for another shard.
	Moved *MovedError
}
