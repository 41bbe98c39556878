//go:build harvest_broken_claim

package intake

// skipStartClaim disables the start-claim check. Only the deliberately
// broken build of the fault suite sets it (scripts/chaos.sh --broken), to
// prove the checker catches duplicate runs. Never ship it.
const skipStartClaim = true
