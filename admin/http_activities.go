package admin

import (
	"fmt"
	"time"

	"github.com/harvestd/harvest/httpactivity"
)

// PutHTTPActivity registers an HTTP activity in the catalog. Putting one
// the catalog holds with the same config changes nothing. Rejections:
// httpactivity.ErrExists (same name, another config),
// httpactivity.ErrInvalidConfig.
type PutHTTPActivity struct {
	Activity httpactivity.Config `json:"activity"`
	At       time.Time           `json:"at"`
}

// DeleteHTTPActivity deletes an HTTP activity by name. Rejection:
// httpactivity.ErrUnknown.
type DeleteHTTPActivity struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
}

var (
	_ Command = PutHTTPActivity{}
	_ Command = DeleteHTTPActivity{}
)

func (PutHTTPActivity) Type() CommandType    { return CmdPutHTTPActivity }
func (DeleteHTTPActivity) Type() CommandType { return CmdDeleteHTTPActivity }

func (p PutHTTPActivity) stamped(now time.Time) Command    { p.At = stamp(p.At, now); return p }
func (d DeleteHTTPActivity) stamped(now time.Time) Command { d.At = stamp(d.At, now); return d }

func (p PutHTTPActivity) check() error { return p.Activity.Validate() }

func (d DeleteHTTPActivity) check() error {
	if d.Name == "" {
		return fmt.Errorf("delete without an activity name: %w", ErrInvalidCommand)
	}
	return nil
}

func (p PutHTTPActivity) apply(c *Catalog) error {
	a := p.Activity.Clone()
	if old, ok := c.HTTPActivities[a.Name]; ok {
		if !old.Same(a) {
			return fmt.Errorf("http activity %s: %w", a.Name, httpactivity.ErrExists)
		}
		return nil
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = p.At.UTC()
	}
	if c.HTTPActivities == nil {
		c.HTTPActivities = make(map[string]httpactivity.Config)
	}
	c.HTTPActivities[a.Name] = a
	return nil
}

func (d DeleteHTTPActivity) apply(c *Catalog) error {
	if _, ok := c.HTTPActivities[d.Name]; !ok {
		return fmt.Errorf("http activity %s: %w", d.Name, httpactivity.ErrUnknown)
	}
	delete(c.HTTPActivities, d.Name)
	return nil
}
