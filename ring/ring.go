// Package ring holds Harvest's placement functions. They are pure: the same
// inputs give the same answer on every node, in every process, forever.
//
// # Hash
//
// Every score is xxHash64 (seed 0) of a domain-separated byte string:
//
//	shard score  = xxh64("harvest/shard/v1" 0x00 shard(uint16 big-endian) primary 0x00 secondary)
//	owner score  = xxh64("harvest/owner/v1" 0x00 shard(uint16 big-endian) nodeID)
//
// Rendezvous (highest-random-weight) hashing picks the candidate with the
// highest score; ties (never seen in practice) go to the lower shard id or
// node id. The construction is part of the on-disk contract: changing it
// would re-route every workflow id and idempotency key.
//
// # Placement
//
// PickShard ranks the readable shards first, so a key's placement does not
// move when the writable set changes; if the winner is not writable, it
// ranks the writable shards. Routing keys are (workflow name, workflow id)
// when the caller gives a workflow id, else (workflow name, idempotency
// key); MintWorkflowID then mints an id that routes back to the key's shard.
package ring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Sentinel errors of the ring.
var (
	// ErrNoWritableShard: the catalog has no shard open for new placement.
	ErrNoWritableShard = errors.New("no writable shard")
	// ErrMintExhausted: rejection sampling found no id routing to the shard.
	ErrMintExhausted = errors.New("could not mint a workflow id for the shard")
)

// Catalog is the placement view: which shards can be read and which take
// new placements. Writable must be a subset of Readable.
type Catalog struct {
	Readable []uint16
	Writable []uint16
}

// Validate checks the subset rule and duplicates.
func (c Catalog) Validate() error {
	seen := map[uint16]bool{}
	for _, s := range c.Readable {
		if seen[s] {
			return fmt.Errorf("shard %d listed twice", s)
		}
		seen[s] = true
	}
	for _, s := range c.Writable {
		if !seen[s] {
			return fmt.Errorf("writable shard %d is not readable", s)
		}
	}
	return nil
}

// ShardScore is the rendezvous score of shard for (primary, secondary).
func ShardScore(shard uint16, primary, secondary string) uint64 {
	var buf [64]byte
	b := append(buf[:0], "harvest/shard/v1\x00"...)
	b = binary.BigEndian.AppendUint16(b, shard)
	b = append(b, primary...)
	b = append(b, 0)
	b = append(b, secondary...)
	return xxhash.Sum64(b)
}

// OwnerScore is the rendezvous score of node for shard.
func OwnerScore(shard uint16, nodeID string) uint64 {
	var buf [64]byte
	b := append(buf[:0], "harvest/owner/v1\x00"...)
	b = binary.BigEndian.AppendUint16(b, shard)
	b = append(b, nodeID...)
	return xxhash.Sum64(b)
}

// best returns the shard of shards with the highest score for the key.
func best(shards []uint16, primary, secondary string) (uint16, bool) {
	var (
		win      uint16
		winScore uint64
		found    bool
	)
	for _, s := range shards {
		sc := ShardScore(s, primary, secondary)
		if !found || sc > winScore || (sc == winScore && s < win) {
			win, winScore, found = s, sc, true
		}
	}
	return win, found
}

// PickShard places (name, routingKey): the best readable shard if it is
// writable, else the best writable shard.
func PickShard(c Catalog, name, routingKey string) (uint16, error) {
	if win, ok := best(c.Readable, name, routingKey); ok && slices.Contains(c.Writable, win) {
		return win, nil
	}
	win, ok := best(c.Writable, name, routingKey)
	if !ok {
		return 0, ErrNoWritableShard
	}
	return win, nil
}

// OwnerOf is the live node that owns shard: the highest owner score.
func OwnerOf(shard uint16, nodes []string) (string, bool) {
	var (
		win      string
		winScore uint64
	)
	for _, n := range nodes {
		sc := OwnerScore(shard, n)
		if win == "" || sc > winScore || (sc == winScore && n < win) {
			win, winScore = n, sc
		}
	}
	return win, win != ""
}

// MintAttemptsMax bounds the rejection sampling of MintWorkflowID. With N
// writable shards one try succeeds with probability about 1/N, so failing
// 4096 tries is out of reach for any catalog Harvest supports.
const MintAttemptsMax = 4096

// MintWorkflowID draws ids from candidate until one routes, as
// (name, id), to the shard that (name, key) routes to.
func MintWorkflowID(c Catalog, name, key string, candidate func() string) (string, uint16, error) {
	target, err := PickShard(c, name, key)
	if err != nil {
		return "", 0, err
	}
	id, err := MintForShard(c, name, target, candidate)
	return id, target, err
}

// MintForShard draws ids from candidate until one routes, as (name, id),
// to shard.
func MintForShard(c Catalog, name string, shard uint16, candidate func() string) (string, error) {
	for range MintAttemptsMax {
		id := candidate()
		if got, err := PickShard(c, name, id); err == nil && got == shard {
			return id, nil
		}
	}
	return "", fmt.Errorf("shard %d: %w", shard, ErrMintExhausted)
}
