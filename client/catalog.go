package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Shard states of the raft shard catalog.
const (
	// ShardReadable: probed for earlier placements, takes no new ones.
	ShardReadable = "readable"
	// ShardWritable: takes new placements.
	ShardWritable = "writable"
	// ShardDraining: takes no new placements; keys and workflow ids placed
	// on it inside the idempotency window still find their runs there.
	ShardDraining = "draining"
	// ShardReadOnly: drained; nothing placed on it is inside the window.
	ShardReadOnly = "read_only"
)

// Catalog is the raft shard catalog (GET /admin/shards).
type Catalog struct {
	// Shards are sorted by id.
	Shards []Shard  `json:"shards"`
	Epochs []Epoch  `json:"epochs"`
	Window Duration `json:"idempotency_window"`
	// Leader is the raft leader's node id; empty when none is known.
	Leader string `json:"leader,omitempty"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Shard is one shard of the catalog.
type Shard struct {
	ShardID uint16 `json:"shard_id"`
	// State is ShardReadable, ShardWritable, ShardDraining or
	// ShardReadOnly.
	State string `json:"state"`
	// Database is the shard's DSN without its password.
	Database   string    `json:"database"`
	AddedAt    time.Time `json:"added_at"`
	StateSince time.Time `json:"state_since"`
	// Owner is the node serving the shard; empty when none is known.
	Owner     string `json:"owner,omitempty"`
	Reachable bool   `json:"reachable"`
	// Status is what the shard still holds inside the idempotency window;
	// nil when the shard is unreachable.
	Status *DrainStatus `json:"status,omitempty"`
	// Error says why the shard is unreachable.
	Error string `json:"error,omitempty"`
	// Raw is this shard's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// DrainStatus is what a shard holds inside the idempotency window.
type DrainStatus struct {
	// ClaimsInWindow counts start idempotency keys still deduplicating.
	ClaimsInWindow int64      `json:"claims_in_window"`
	NewestClaimAt  *time.Time `json:"newest_claim_at,omitempty"`
	// RunsInWindow counts runs created inside the window (their workflow
	// ids are still probed by starts routed elsewhere).
	RunsInWindow int64      `json:"runs_in_window"`
	NewestRunAt  *time.Time `json:"newest_run_at,omitempty"`
	// RunningExecutions counts runs not closed yet; a drain lets them
	// finish.
	RunningExecutions int64 `json:"running_executions"`
	// WindowPassesAt is when nothing placed on the shard is inside the
	// window any more; nil when that is already so.
	WindowPassesAt *time.Time `json:"window_passes_at,omitempty"`
	// Now is the shard database's clock when the status was read.
	Now time.Time `json:"now"`
}

// Epoch is one placement epoch: the shards readable and writable from
// Since on.
type Epoch struct {
	Number   uint64    `json:"number"`
	Since    time.Time `json:"since"`
	Readable []uint16  `json:"readable"`
	Writable []uint16  `json:"writable"`
}

// Drain is the answer of DrainShard.
type Drain struct {
	Shard Shard `json:"shard"`
	// Forced is true when force overrode a safety check; Risk says which.
	Forced bool   `json:"forced"`
	Risk   string `json:"risk,omitempty"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Duration is a time.Duration sent as Go duration text ("24h0m0s").
type Duration time.Duration

// UnmarshalJSON parses the duration text.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Shards returns the catalog: every shard with what it still holds inside
// the idempotency window, the placement epochs, the window and the
// leader. A node without a raft catalog answers ErrNotFound.
func (c *Client) Shards(ctx context.Context) (*Catalog, error) {
	var body struct {
		Catalog
		Shards []json.RawMessage `json:"shards"`
	}
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/admin/shards"}, &body)
	if err != nil {
		return nil, err
	}
	cat := body.Catalog
	cat.Shards = make([]Shard, len(body.Shards))
	for i, raw := range body.Shards {
		if err := decodeShard(raw, &cat.Shards[i]); err != nil {
			return nil, fmt.Errorf("GET /admin/shards: decode shard %d: %w", i, err)
		}
	}
	cat.Raw = rep.body
	return &cat, nil
}

// Shard returns one shard (ErrNotFound when the catalog has none of that
// id).
func (c *Client) Shard(ctx context.Context, id uint16) (*Shard, error) {
	return c.shardCall(ctx, call{method: http.MethodGet, path: shardPath(id)})
}

// AddShard adds a shard database to the catalog: the leader connects to
// and migrates it, then opens it for placement. A database the leader
// cannot use answers ErrShardUnreachable; an id already in the catalog
// ErrConflict.
func (c *Client) AddShard(ctx context.Context, id uint16, dsn string) (*Shard, error) {
	if dsn == "" {
		return nil, fmt.Errorf("shard dsn is empty: %w", ErrInvalid)
	}
	body, err := encodeBody(struct {
		ShardID uint16 `json:"shard_id"`
		DSN     string `json:"dsn"`
	}{id, dsn})
	if err != nil {
		return nil, err
	}
	return c.shardCall(ctx, call{method: http.MethodPost, path: "/admin/shards", body: body})
}

// DrainShard stops new placement on a writable shard; runs on it go on and
// retries inside the window still find them. The server refuses an unsafe
// drain (the last writable shard, an unreachable one) with ErrUnsafeDrain
// unless force, and then says what was risked in Drain.Risk.
func (c *Client) DrainShard(ctx context.Context, id uint16, force bool) (*Drain, error) {
	body, err := encodeBody(struct {
		Force bool `json:"force"`
	}{force})
	if err != nil {
		return nil, err
	}
	var d struct {
		Drain
		Shard json.RawMessage `json:"shard"`
	}
	cl := call{method: http.MethodPost, path: shardPath(id) + "/drain", body: body}
	rep, err := c.do(ctx, cl, &d)
	if err != nil {
		return nil, err
	}
	out := d.Drain
	if err := decodeShard(d.Shard, &out.Shard); err != nil {
		return nil, fmt.Errorf("%s %s: decode shard: %w", cl.method, cl.path, err)
	}
	out.Raw = rep.body
	return &out, nil
}

// UndrainShard makes a draining, read-only or readable shard writable
// again.
func (c *Client) UndrainShard(ctx context.Context, id uint16) (*Shard, error) {
	return c.shardCall(ctx, call{method: http.MethodPost, path: shardPath(id) + "/undrain"})
}

func (c *Client) shardCall(ctx context.Context, cl call) (*Shard, error) {
	var raw json.RawMessage
	if _, err := c.do(ctx, cl, &raw); err != nil {
		return nil, err
	}
	var sh Shard
	if err := decodeShard(raw, &sh); err != nil {
		return nil, fmt.Errorf("%s %s: decode shard: %w", cl.method, cl.path, err)
	}
	return &sh, nil
}

// decodeShard decodes one shard object and keeps its JSON.
func decodeShard(raw json.RawMessage, sh *Shard) error {
	if err := json.Unmarshal(raw, sh); err != nil {
		return err
	}
	sh.Raw = raw
	return nil
}

func shardPath(id uint16) string { return "/admin/shards/" + strconv.FormatUint(uint64(id), 10) }

// Find returns the catalog's shard of that id, or nil.
func (c *Catalog) Find(id uint16) *Shard {
	for i := range c.Shards {
		if c.Shards[i].ShardID == id {
			return &c.Shards[i]
		}
	}
	return nil
}
