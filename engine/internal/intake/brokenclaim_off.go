//go:build !harvest_broken_claim

package intake

// skipStartClaim is false in every real build; see brokenclaim_on.go.
const skipStartClaim = false
