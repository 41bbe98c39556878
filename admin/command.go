package admin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// CommandType is the first byte of every raft log entry the admin FSM
// applies; the rest of the entry is the command's JSON body. Values are
// part of the on-disk log format: never renumber them, only add new ones.
type CommandType uint8

// Command types.
const (
	// CmdBootstrap seeds an empty catalog with the static shard
	// configuration (Bootstrap).
	CmdBootstrap CommandType = iota + 1
	// CmdAddShard adds a shard (AddShard).
	CmdAddShard
	// CmdSetShardState moves a shard through its lifecycle: open, drain,
	// undrain, finish drain, reopen (SetShardState).
	CmdSetShardState
	// CmdSetSettings replaces the cluster settings (SetSettings).
	CmdSetSettings
	// CmdPutToken adds an API token (PutToken).
	CmdPutToken
	// CmdRevokeToken revokes an API token (RevokeToken).
	CmdRevokeToken
	// CmdPutWebhook adds a webhook receiver (PutWebhook).
	CmdPutWebhook
	// CmdDeleteWebhook deletes a webhook receiver (DeleteWebhook).
	CmdDeleteWebhook
	// CmdPutSchedule creates a schedule (PutSchedule).
	CmdPutSchedule
	// CmdSetSchedulePaused pauses or resumes a schedule (SetSchedulePaused).
	CmdSetSchedulePaused
	// CmdDeleteSchedule deletes a schedule (DeleteSchedule).
	CmdDeleteSchedule
	// CmdPutHTTPActivity registers an HTTP activity (PutHTTPActivity).
	CmdPutHTTPActivity
	// CmdDeleteHTTPActivity deletes an HTTP activity (DeleteHTTPActivity).
	CmdDeleteHTTPActivity
	// CmdPutLimit sets a flow control limit (PutLimit).
	CmdPutLimit
	// CmdDeleteLimit deletes a flow control limit (DeleteLimit).
	CmdDeleteLimit
)

func (t CommandType) String() string {
	switch t {
	case CmdBootstrap:
		return "bootstrap"
	case CmdAddShard:
		return "add_shard"
	case CmdSetShardState:
		return "set_shard_state"
	case CmdSetSettings:
		return "set_settings"
	case CmdPutToken:
		return "put_token"
	case CmdRevokeToken:
		return "revoke_token"
	case CmdPutWebhook:
		return "put_webhook"
	case CmdDeleteWebhook:
		return "delete_webhook"
	case CmdPutSchedule:
		return "put_schedule"
	case CmdSetSchedulePaused:
		return "set_schedule_paused"
	case CmdDeleteSchedule:
		return "delete_schedule"
	case CmdPutHTTPActivity:
		return "put_http_activity"
	case CmdDeleteHTTPActivity:
		return "delete_http_activity"
	case CmdPutLimit:
		return "put_limit"
	case CmdDeleteLimit:
		return "delete_limit"
	}
	return fmt.Sprintf("command(%d)", uint8(t))
}

// Command is a change to the catalog, proposed with Admin.Apply. The
// implementations are Bootstrap, AddShard, SetShardState and SetSettings.
//
// Each command carries its timestamp (At) so that every node applies it
// identically; Admin.Apply sets a zero At to the leader's clock.
type Command interface {
	// Type returns the command's type byte.
	Type() CommandType
	// stamped returns the command with At set to now when it is zero.
	stamped(now time.Time) Command
	// check validates the command's own fields.
	check() error
	// apply changes c and returns nil or a rejection.
	apply(c *Catalog) error
}

// Bootstrap seeds an empty catalog: every shard of the static
// configuration becomes writable in epoch 1 and Settings become the
// cluster settings. On a catalog that is not empty it is ignored, so every
// leader may propose it safely.
type Bootstrap struct {
	// Shards maps shard ids to DSNs; at least one.
	Shards map[uint16]string `json:"shards"`
	// Settings are the initial settings; a zero window means the default.
	Settings Settings `json:"settings"`
	// At is the proposer's clock.
	At time.Time `json:"at"`
}

// AddShard adds a shard: writable at once when Writable is set, else
// readable (added but not open for placement until SetShardState opens
// it). Rejections: ErrShardExists, ErrInvalidCommand.
type AddShard struct {
	ID       uint16    `json:"id"`
	DSN      string    `json:"dsn"`
	Writable bool      `json:"writable"`
	At       time.Time `json:"at"`
}

// SetShardState moves a shard to State (see ShardState for the allowed
// transitions). Rejections: ErrUnknownShard, ErrInvalidTransition.
type SetShardState struct {
	ID    uint16     `json:"id"`
	State ShardState `json:"state"`
	At    time.Time  `json:"at"`
}

// SetSettings replaces the cluster settings. A shorter window prunes old
// epochs at once. Rejection: ErrInvalidCommand for a window that is not
// positive.
type SetSettings struct {
	IdempotencyWindow time.Duration `json:"idempotency_window"`
	At                time.Time     `json:"at"`
}

var (
	_ Command = Bootstrap{}
	_ Command = AddShard{}
	_ Command = SetShardState{}
	_ Command = SetSettings{}
)

func (Bootstrap) Type() CommandType     { return CmdBootstrap }
func (AddShard) Type() CommandType      { return CmdAddShard }
func (SetShardState) Type() CommandType { return CmdSetShardState }
func (SetSettings) Type() CommandType   { return CmdSetSettings }

func (b Bootstrap) stamped(now time.Time) Command     { b.At = stamp(b.At, now); return b }
func (a AddShard) stamped(now time.Time) Command      { a.At = stamp(a.At, now); return a }
func (s SetShardState) stamped(now time.Time) Command { s.At = stamp(s.At, now); return s }
func (s SetSettings) stamped(now time.Time) Command   { s.At = stamp(s.At, now); return s }

func stamp(at, now time.Time) time.Time {
	if at.IsZero() {
		return now.UTC()
	}
	return at
}

func (b Bootstrap) check() error {
	if len(b.Shards) == 0 {
		return fmt.Errorf("bootstrap without shards: %w", ErrInvalidCommand)
	}
	for _, id := range slices.Sorted(maps.Keys(b.Shards)) {
		if err := checkShard(id, b.Shards[id]); err != nil {
			return err
		}
	}
	if b.Settings.IdempotencyWindow < 0 {
		return fmt.Errorf("negative idempotency window: %w", ErrInvalidCommand)
	}
	return nil
}

func (a AddShard) check() error { return checkShard(a.ID, a.DSN) }

func (s SetShardState) check() error {
	if !s.State.Valid() {
		return fmt.Errorf("shard %d: unknown state %q: %w", s.ID, s.State, ErrInvalidTransition)
	}
	return nil
}

func (s SetSettings) check() error {
	if s.IdempotencyWindow <= 0 {
		return fmt.Errorf("idempotency window %s: must be positive: %w", s.IdempotencyWindow, ErrInvalidCommand)
	}
	return nil
}

func checkShard(id uint16, dsn string) error {
	if id > MaxShardID {
		return fmt.Errorf("shard id %d: out of range 0..%d: %w", id, MaxShardID, ErrInvalidCommand)
	}
	if dsn == "" {
		return fmt.Errorf("shard %d: empty dsn: %w", id, ErrInvalidCommand)
	}
	return nil
}

func (b Bootstrap) apply(c *Catalog) error {
	if !c.Empty() {
		return nil
	}
	at := b.At.UTC()
	c.Settings = b.Settings
	c.Shards = make(map[uint16]Shard, len(b.Shards))
	for id, dsn := range b.Shards {
		c.Shards[id] = Shard{ID: id, DSN: dsn, State: StateWritable, AddedAt: at, StateSince: at}
	}
	c.advance(at)
	return nil
}

func (a AddShard) apply(c *Catalog) error {
	if _, ok := c.Shards[a.ID]; ok {
		return fmt.Errorf("shard %d: %w", a.ID, ErrShardExists)
	}
	at := a.At.UTC()
	state := StateReadable
	if a.Writable {
		state = StateWritable
	}
	if c.Shards == nil {
		c.Shards = make(map[uint16]Shard)
	}
	c.Shards[a.ID] = Shard{ID: a.ID, DSN: a.DSN, State: state, AddedAt: at, StateSince: at}
	c.advance(at)
	return nil
}

func (s SetShardState) apply(c *Catalog) error {
	sh, ok := c.Shards[s.ID]
	if !ok {
		return fmt.Errorf("shard %d: %w", s.ID, ErrUnknownShard)
	}
	if !sh.State.CanBecome(s.State) {
		return fmt.Errorf("shard %d: %s to %s: %w", s.ID, sh.State, s.State, ErrInvalidTransition)
	}
	at := s.At.UTC()
	sh.State, sh.StateSince = s.State, at
	c.Shards[s.ID] = sh
	c.advance(at)
	return nil
}

func (s SetSettings) apply(c *Catalog) error {
	c.Settings.IdempotencyWindow = s.IdempotencyWindow
	c.prune(s.At.UTC())
	return nil
}

// encodeCommand returns the log entry for cmd: its type byte and JSON
// body.
func encodeCommand(cmd Command) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("encode %s command: %w", cmd.Type(), err)
	}
	return append([]byte{byte(cmd.Type())}, body...), nil
}

// decodeCommand reverses encodeCommand. An error here means the log holds
// an entry this version cannot read; the FSM panics on it.
func decodeCommand(data []byte) (Command, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty log entry")
	}
	typ, body := CommandType(data[0]), data[1:]
	var cmd Command
	var err error
	switch typ {
	case CmdBootstrap:
		cmd, err = decodeBody[Bootstrap](body)
	case CmdAddShard:
		cmd, err = decodeBody[AddShard](body)
	case CmdSetShardState:
		cmd, err = decodeBody[SetShardState](body)
	case CmdSetSettings:
		cmd, err = decodeBody[SetSettings](body)
	case CmdPutToken:
		cmd, err = decodeBody[PutToken](body)
	case CmdRevokeToken:
		cmd, err = decodeBody[RevokeToken](body)
	case CmdPutWebhook:
		cmd, err = decodeBody[PutWebhook](body)
	case CmdDeleteWebhook:
		cmd, err = decodeBody[DeleteWebhook](body)
	case CmdPutSchedule:
		cmd, err = decodeBody[PutSchedule](body)
	case CmdSetSchedulePaused:
		cmd, err = decodeBody[SetSchedulePaused](body)
	case CmdDeleteSchedule:
		cmd, err = decodeBody[DeleteSchedule](body)
	case CmdPutHTTPActivity:
		cmd, err = decodeBody[PutHTTPActivity](body)
	case CmdDeleteHTTPActivity:
		cmd, err = decodeBody[DeleteHTTPActivity](body)
	case CmdPutLimit:
		cmd, err = decodeBody[PutLimit](body)
	case CmdDeleteLimit:
		cmd, err = decodeBody[DeleteLimit](body)
	default:
		return nil, fmt.Errorf("unknown command type %d", uint8(typ))
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s command: %w", typ, err)
	}
	return cmd, nil
}

func decodeBody[T Command](body []byte) (T, error) {
	var cmd T
	err := json.Unmarshal(body, &cmd)
	return cmd, err
}
