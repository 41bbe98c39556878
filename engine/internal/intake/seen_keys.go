package intake

import (
	"hash/maphash"
	"sync"

	"github.com/harvestd/harvest/engine/internal/loop"
)

// seenKeys remembers start keys this engine has claimed or answered a
// replay of, so that the API can tell a likely replay (probe the claim
// first: the read-only fast path) from a likely fresh start (go straight
// to the start batch, which claims keys exactly and answers a live claim
// as a replay). Being wrong either way costs speed, never correctness.
// Keys are kept as 64-bit hashes in two bounded generations.
type seenKeys struct {
	seed maphash.Seed
	mu   sync.Mutex
	keys loop.Generations[uint64, struct{}]
}

// seenGeneration is the size at which the keys start a new generation,
// dropping the oldest.
const seenGeneration = 1 << 16

func newSeenKeys() *seenKeys {
	return &seenKeys{seed: maphash.MakeSeed(), keys: loop.NewGenerations[uint64, struct{}](seenGeneration)}
}

func (k *seenKeys) hash(name, key string) uint64 {
	var h maphash.Hash
	h.SetSeed(k.seed)
	_, _ = h.WriteString(name)
	_ = h.WriteByte(0)
	_, _ = h.WriteString(key)
	return h.Sum64()
}

func (k *seenKeys) add(name, key string) {
	h := k.hash(name, key)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys.Add(h, struct{}{})
}

func (k *seenKeys) has(name, key string) bool {
	h := k.hash(name, key)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys.Has(h)
}

// KnownStartKey reports whether this engine has claimed the start key or
// answered a replay of it: a start with it is likely a replay, and is
// best probed (LookupStartKey) before anything else. An unknown key is
// likely fresh; its start may skip the probe if it probes after a
// failure instead (see StartRequest.Probed).
func (in *Intake) KnownStartKey(name, key string) bool {
	return in.keys.has(name, key) || in.claims.has(name, key)
}
