package membership

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Match them with errors.Is.
var (
	// ErrAlreadyStarted is returned by Start on a Membership that is running.
	ErrAlreadyStarted = errors.New("membership already started")
	// ErrNotStarted is returned by UpdateMeta before Start.
	ErrNotStarted = errors.New("membership not started")
	// ErrStopped is returned by Start and UpdateMeta after Stop.
	ErrStopped = errors.New("membership stopped")
	// ErrMetaTooLarge means the encoded node metadata exceeds memberlist's
	// limit (MetaMaxSize bytes). The concrete error is a *MetaTooLargeError.
	ErrMetaTooLarge = errors.New("node metadata too large")
	// ErrInvalidGossipKey means a gossip encryption key is not valid base64
	// or is not 16, 24 or 32 bytes long.
	ErrInvalidGossipKey = errors.New("invalid gossip key")
	// ErrInvalidProof means a member's metadata carries no valid member
	// proof (Config.ClusterKey): memberlist is told to refuse it.
	ErrInvalidProof = errors.New("member proof missing or invalid")
	// ErrNoClusterKey: Rotate was given the zero key.
	ErrNoClusterKey = errors.New("no cluster key")
	// ErrNoGossipKey: RotateGossipKey without keys, or on a membership
	// that does not encrypt gossip.
	ErrNoGossipKey = errors.New("no gossip key")
	// ErrGossipKeyDerived: RotateGossipKey on a membership whose gossip
	// key comes from the cluster key (rotate the cluster key instead).
	ErrGossipKeyDerived = errors.New("the gossip key is derived from the cluster key")
)

// MetaTooLargeError reports node metadata whose encoding is Size bytes,
// more than Limit. It matches ErrMetaTooLarge.
type MetaTooLargeError struct {
	Size  int
	Limit int
}

func (e *MetaTooLargeError) Error() string {
	return fmt.Sprintf("node metadata is %d bytes encoded, limit %d", e.Size, e.Limit)
}

// Is reports whether target is ErrMetaTooLarge.
func (e *MetaTooLargeError) Is(target error) bool { return target == ErrMetaTooLarge }
