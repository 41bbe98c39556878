package admin

import (
	"fmt"
	"time"

	"github.com/harvestd/harvest/webhook"
)

// PutWebhook adds a webhook receiver to the catalog. Putting one the
// catalog holds with the same config changes nothing. Rejections:
// webhook.ErrExists (same name, another config), webhook.ErrInvalidConfig.
type PutWebhook struct {
	Webhook webhook.Config `json:"webhook"`
	At      time.Time      `json:"at"`
}

// DeleteWebhook deletes a webhook receiver by name. Rejection:
// webhook.ErrUnknown.
type DeleteWebhook struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
}

var (
	_ Command = PutWebhook{}
	_ Command = DeleteWebhook{}
)

func (PutWebhook) Type() CommandType    { return CmdPutWebhook }
func (DeleteWebhook) Type() CommandType { return CmdDeleteWebhook }

func (p PutWebhook) stamped(now time.Time) Command    { p.At = stamp(p.At, now); return p }
func (d DeleteWebhook) stamped(now time.Time) Command { d.At = stamp(d.At, now); return d }

func (p PutWebhook) check() error { return p.Webhook.Validate() }

func (d DeleteWebhook) check() error {
	if d.Name == "" {
		return fmt.Errorf("delete without a webhook name: %w", ErrInvalidCommand)
	}
	return nil
}

func (p PutWebhook) apply(c *Catalog) error {
	w := p.Webhook
	if old, ok := c.Webhooks[w.Name]; ok {
		if !old.Same(w) {
			return fmt.Errorf("webhook %s: %w", w.Name, webhook.ErrExists)
		}
		return nil
	}
	if w.CreatedAt.IsZero() {
		w.CreatedAt = p.At.UTC()
	}
	if c.Webhooks == nil {
		c.Webhooks = make(map[string]webhook.Config)
	}
	c.Webhooks[w.Name] = w
	return nil
}

func (d DeleteWebhook) apply(c *Catalog) error {
	if _, ok := c.Webhooks[d.Name]; !ok {
		return fmt.Errorf("webhook %s: %w", d.Name, webhook.ErrUnknown)
	}
	delete(c.Webhooks, d.Name)
	return nil
}
