package admin

import (
	"fmt"
	"time"

	"github.com/harvestd/harvest/flowlimit"
)

// PutLimit sets the flow control limit of a workflow or an activity,
// replacing the one the catalog holds under its kind and name (putting
// the same limit again changes nothing, its UpdatedAt included).
// Rejection: flowlimit.ErrInvalid.
type PutLimit struct {
	Limit flowlimit.Limit `json:"limit"`
	At    time.Time       `json:"at"`
}

// DeleteLimit deletes the limit of a kind and name. Rejections:
// flowlimit.ErrUnknown, ErrInvalidCommand.
type DeleteLimit struct {
	Kind flowlimit.Kind `json:"kind"`
	Name string         `json:"name"`
	At   time.Time      `json:"at"`
}

var (
	_ Command = PutLimit{}
	_ Command = DeleteLimit{}
)

func (PutLimit) Type() CommandType    { return CmdPutLimit }
func (DeleteLimit) Type() CommandType { return CmdDeleteLimit }

func (p PutLimit) stamped(now time.Time) Command    { p.At = stamp(p.At, now); return p }
func (d DeleteLimit) stamped(now time.Time) Command { d.At = stamp(d.At, now); return d }

func (p PutLimit) check() error { return p.Limit.Validate() }

func (d DeleteLimit) check() error {
	if !d.Kind.Valid() || d.Name == "" {
		return fmt.Errorf("delete limit %q of kind %q: %w", d.Name, d.Kind, ErrInvalidCommand)
	}
	return nil
}

func (p PutLimit) apply(c *Catalog) error {
	l := p.Limit
	if old, ok := c.Limits[l.Key()]; ok && old.Same(l) {
		return nil
	}
	if l.UpdatedAt.IsZero() {
		l.UpdatedAt = p.At.UTC()
	}
	if c.Limits == nil {
		c.Limits = make(map[string]flowlimit.Limit)
	}
	c.Limits[l.Key()] = l
	return nil
}

func (d DeleteLimit) apply(c *Catalog) error {
	key := flowlimit.Key(d.Kind, d.Name)
	if _, ok := c.Limits[key]; !ok {
		return fmt.Errorf("%s limit %s: %w", d.Kind, d.Name, flowlimit.ErrUnknown)
	}
	delete(c.Limits, key)
	return nil
}
