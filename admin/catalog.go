package admin

import (
	"maps"
	"slices"
	"time"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/flowlimit"
	"github.com/harvestd/harvest/httpactivity"
	"github.com/harvestd/harvest/ring"
	"github.com/harvestd/harvest/webhook"
)

// IdempotencyWindowDefault is the idempotency window of a catalog whose
// Settings leave it zero.
const IdempotencyWindowDefault = 24 * time.Hour

// MaxShardID is the largest shard id; 0xFFFF is reserved.
const MaxShardID = 65534

// ShardState is where a shard is in its lifecycle.
//
// Every shard in the catalog, whatever its state, is readable: routing
// probes it for existing workflows and idempotency keys. Only writable
// shards take new placements. The transitions are:
//
//	readable  -> writable            open an added shard for placement
//	writable  -> draining            stop new placements (drain)
//	draining  -> writable            undrain
//	draining  -> read_only           finish the drain
//	read_only -> writable            reopen
//
// Any other change, including to the same state, is ErrInvalidTransition.
type ShardState string

// Shard states.
const (
	// StateReadable: added but not yet open for placement.
	StateReadable ShardState = "readable"
	// StateWritable: takes new placements.
	StateWritable ShardState = "writable"
	// StateDraining: no new placements; still answers probes for keys
	// placed on it inside the idempotency window.
	StateDraining ShardState = "draining"
	// StateReadOnly: drained; existing workflows stay readable.
	StateReadOnly ShardState = "read_only"
)

// transitions lists the allowed state changes.
var transitions = map[ShardState][]ShardState{
	StateReadable: {StateWritable},
	StateWritable: {StateDraining},
	StateDraining: {StateWritable, StateReadOnly},
	StateReadOnly: {StateWritable},
}

// Valid reports whether s is one of the four states.
func (s ShardState) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// CanBecome reports whether a shard in state s may move to state to.
func (s ShardState) CanBecome(to ShardState) bool {
	return slices.Contains(transitions[s], to)
}

// Shard is one shard database in the catalog.
type Shard struct {
	// ID is the shard id, 0..MaxShardID; it is the first two bytes of
	// every execution id placed on the shard.
	ID uint16 `json:"id"`
	// DSN is the PostgreSQL connection string of the shard's database.
	DSN string `json:"dsn"`
	// State is the shard's lifecycle state.
	State ShardState `json:"state"`
	// AddedAt is when the shard joined the catalog.
	AddedAt time.Time `json:"added_at"`
	// StateSince is when the shard entered State.
	StateSince time.Time `json:"state_since"`
}

// Epoch is one placement view: the readable and writable sets from Since
// until the next epoch's Since.
type Epoch struct {
	// Number counts epochs from 1; each set change adds one.
	Number uint64 `json:"number"`
	// Since is the timestamp of the command that made the change.
	Since time.Time `json:"since"`
	// Readable lists every shard in the catalog, sorted.
	Readable []uint16 `json:"readable"`
	// Writable lists the writable shards, sorted.
	Writable []uint16 `json:"writable"`
}

// Placement returns the epoch's sets as a ring catalog. The slices are
// shared with e.
func (e Epoch) Placement() ring.Catalog {
	return ring.Catalog{Readable: e.Readable, Writable: e.Writable}
}

// Settings are the cluster-wide settings kept in the catalog.
type Settings struct {
	// IdempotencyWindow is how long idempotency keys are remembered, and
	// so how long placement epochs are kept. Zero means
	// IdempotencyWindowDefault.
	IdempotencyWindow time.Duration `json:"idempotency_window"`
}

// Window returns IdempotencyWindow, or the default when it is zero.
func (s Settings) Window() time.Duration {
	if s.IdempotencyWindow <= 0 {
		return IdempotencyWindowDefault
	}
	return s.IdempotencyWindow
}

// Catalog is the state the raft group agrees on: the shards, the placement
// epochs and the settings.
//
// Invariants: Epochs is ordered by Number and Since, oldest first; the last
// epoch is the current placement, and its sets equal the ones computed
// from Shards. Epochs older than the idempotency window are pruned, except
// the current one.
type Catalog struct {
	// Shards holds every shard by id.
	Shards map[uint16]Shard `json:"shards"`
	// Epochs lists the placement epochs still inside the window, oldest
	// first; the last one is current.
	Epochs []Epoch `json:"epochs"`
	// Settings are the cluster settings.
	Settings Settings `json:"settings"`
	// Tokens are the API's bearer tokens by id: hashes only, never
	// secrets (see package auth).
	Tokens map[string]auth.Token `json:"tokens,omitempty"`
	// Webhooks are the webhook receivers by name, with their secrets
	// (see package webhook): redact them before showing one.
	Webhooks map[string]webhook.Config `json:"webhooks,omitempty"`
	// Schedules are the schedules' definitions by id, deleted ones as
	// markers (see ScheduleDef).
	Schedules map[string]ScheduleDef `json:"schedules,omitempty"`
	// HTTPActivities are the HTTP activities registered at run time, by
	// name, with their header values: redact them before showing one.
	HTTPActivities map[string]httpactivity.Config `json:"http_activities,omitempty"`
	// Limits are the flow control limits set at run time, by
	// flowlimit.Key (kind/name).
	Limits map[string]flowlimit.Limit `json:"limits,omitempty"`
	// Index is the raft log index of the last applied command.
	Index uint64 `json:"index"`
}

// Empty reports whether the catalog has neither shards nor epochs: the
// state before the Bootstrap command.
func (c Catalog) Empty() bool {
	return len(c.Shards) == 0 && len(c.Epochs) == 0
}

// Current returns the current placement: every shard readable, the
// writable ones writable. An empty catalog gives an empty ring.Catalog.
// The slices are shared with c.
func (c Catalog) Current() ring.Catalog {
	if len(c.Epochs) == 0 {
		return ring.Catalog{}
	}
	return c.Epochs[len(c.Epochs)-1].Placement()
}

// CurrentEpoch returns the current epoch; ok is false when there is none.
func (c Catalog) CurrentEpoch() (e Epoch, ok bool) {
	if len(c.Epochs) == 0 {
		return Epoch{}, false
	}
	return c.Epochs[len(c.Epochs)-1], true
}

// WithinWindow returns the distinct placements of every epoch that was
// current at some point in [now-window, now], the current one first, then
// older ones newest first. An epoch that ended exactly at now-window still
// counts. Epochs are never left out for starting after now: clock skew
// between the proposing leader and this node only widens the answer.
// Routing probes these placements for keys that may have been placed
// before the last set change. An empty catalog gives nil.
func (c Catalog) WithinWindow(now time.Time) []ring.Catalog {
	if len(c.Epochs) == 0 {
		return nil
	}
	from := now.Add(-c.Settings.Window())
	last := len(c.Epochs) - 1
	out := []ring.Catalog{c.Epochs[last].Placement()}
	for i := last - 1; i >= 0; i-- {
		if c.Epochs[i+1].Since.Before(from) {
			break // this epoch and every older one ended before the window
		}
		p := c.Epochs[i].Placement()
		if !slices.ContainsFunc(out, func(q ring.Catalog) bool { return samePlacement(p, q) }) {
			out = append(out, p)
		}
	}
	return out
}

// Clone returns a deep copy of c.
func (c Catalog) Clone() Catalog {
	out := c
	out.Shards = maps.Clone(c.Shards)
	out.Tokens = maps.Clone(c.Tokens)
	out.Webhooks = maps.Clone(c.Webhooks)
	out.Schedules = maps.Clone(c.Schedules)
	out.HTTPActivities = cloneActivities(c.HTTPActivities)
	out.Limits = maps.Clone(c.Limits)
	if c.Epochs != nil {
		out.Epochs = make([]Epoch, len(c.Epochs))
		for i, e := range c.Epochs {
			e.Readable = slices.Clone(e.Readable)
			e.Writable = slices.Clone(e.Writable)
			out.Epochs[i] = e
		}
	}
	return out
}

// Shard returns the shard with id.
func (c Catalog) Shard(id uint16) (Shard, bool) {
	s, ok := c.Shards[id]
	return s, ok
}

// sets computes the readable and writable sets from the shards, sorted.
func (c Catalog) sets() (readable, writable []uint16) {
	readable = make([]uint16, 0, len(c.Shards))
	writable = make([]uint16, 0, len(c.Shards))
	for id, s := range c.Shards {
		readable = append(readable, id)
		if s.State == StateWritable {
			writable = append(writable, id)
		}
	}
	slices.Sort(readable)
	slices.Sort(writable)
	return readable, writable
}

// advance appends an epoch at time at when the sets computed from Shards
// differ from the current epoch's, then prunes epochs that ended before
// at minus the window. Since never goes backwards: a proposer whose clock
// is behind the previous one's gets the previous epoch's Since.
func (c *Catalog) advance(at time.Time) {
	readable, writable := c.sets()
	cur, ok := c.CurrentEpoch()
	if !ok || !slices.Equal(cur.Readable, readable) || !slices.Equal(cur.Writable, writable) {
		since := at
		if ok && since.Before(cur.Since) {
			since = cur.Since
		}
		c.Epochs = append(c.Epochs, Epoch{Number: cur.Number + 1, Since: since, Readable: readable, Writable: writable})
	}
	c.prune(at)
}

// prune drops the epochs whose successor began before at minus the
// window; the current epoch is always kept.
func (c *Catalog) prune(at time.Time) {
	from := at.Add(-c.Settings.Window())
	drop := 0
	for drop < len(c.Epochs)-1 && c.Epochs[drop+1].Since.Before(from) {
		drop++
	}
	if drop > 0 {
		c.Epochs = slices.Delete(c.Epochs, 0, drop)
	}
}

// cloneActivities deep-copies the activities (their headers are maps).
func cloneActivities(in map[string]httpactivity.Config) map[string]httpactivity.Config {
	if in == nil {
		return nil
	}
	out := make(map[string]httpactivity.Config, len(in))
	for name, a := range in {
		out[name] = a.Clone()
	}
	return out
}

func samePlacement(a, b ring.Catalog) bool {
	return slices.Equal(a.Readable, b.Readable) && slices.Equal(a.Writable, b.Writable)
}
