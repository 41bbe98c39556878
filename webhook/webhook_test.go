package webhook_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/webhooktest"
	"github.com/harvestd/harvest/webhook"
)

var (
	opensslHMAC     = webhooktest.OpenSSLHMAC
	stripeSignature = webhooktest.StripeSignature
)

func TestGitHubDocumentedVector(t *testing.T) {
	// docs.github.com, "Validating webhook deliveries", "Testing the
	// webhook payload validation".
	c := webhook.Config{Name: "gh", Provider: webhook.GitHub, Secret: "It's a Secret to Everybody", Action: webhook.ActionStart, Workflow: "w"}
	require.NoError(t, c.Validate())
	const sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	require.Equal(t, strings.TrimPrefix(sig, "sha256="), opensslHMAC(t, c.Secret, "Hello, World!"), "openssl agrees with the documented vector")
	h := http.Header{}
	h.Set("X-Hub-Signature-256", sig)
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	for _, tc := range []struct {
		name, body, sig string
		err             error
	}{
		{"documented vector", "Hello, World!", sig, nil},
		{"tampered body", "Hello, World?", sig, webhook.ErrSignature},
		{"no prefix", "Hello, World!", strings.TrimPrefix(sig, "sha256="), webhook.ErrSignature},
		{"missing", "Hello, World!", "", webhook.ErrSignature},
		{"not hex", "Hello, World!", "sha256=zz", webhook.ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h.Clone()
			h.Set("X-Hub-Signature-256", tc.sig)
			d, err := c.Verify(h, []byte(tc.body), time.Now())
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "72d3162e-cc78-11e3-81ab-4c9367dc0958", d.ID)
			require.Equal(t, "hv:webhook:gh:sha256:"+webhooktest.OpenSSLSHA256(t, tc.body), d.Key, "the key is the signed body's digest")
		})
	}
	t.Run("the unsigned delivery id is not in the key", func(t *testing.T) {
		// One captured body with made-up delivery ids: one key.
		keys := map[string]bool{}
		for _, id := range []string{"72d3162e-cc78-11e3-81ab-4c9367dc0958", "forged-1", "forged-2", "x"} {
			h := h.Clone()
			h.Set("X-GitHub-Delivery", id)
			d, err := c.Verify(h, []byte("Hello, World!"), time.Now())
			require.NoError(t, err)
			require.Equal(t, id, d.ID, "the header is still reported")
			keys[d.Key] = true
		}
		require.Len(t, keys, 1, "%v", keys)
		other := "Hello, World!!"
		h := h.Clone()
		h.Set("X-Hub-Signature-256", webhooktest.GitHubSignature(t, c.Secret, other))
		d, err := c.Verify(h, []byte(other), time.Now())
		require.NoError(t, err)
		require.NotContains(t, keys, d.Key, "another signed body is another delivery")
	})
	t.Run("no delivery header", func(t *testing.T) {
		h := h.Clone()
		h.Del("X-GitHub-Delivery")
		_, err := c.Verify(h, []byte("Hello, World!"), time.Now())
		require.ErrorIs(t, err, webhook.ErrPayload)
	})
}

func TestStripeSignature(t *testing.T) {
	c := webhook.Config{Name: "stripe", Provider: webhook.Stripe, Secret: "whsec_test_secret", Action: webhook.ActionStart, Workflow: "w"}
	require.NoError(t, c.Validate())
	now := time.Now()
	const payload = `{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","type":"payment_intent.succeeded","data":{"object":{"customer":"cus_9"}}}`
	for _, tc := range []struct {
		name, header, body string
		err                error
	}{
		{"valid", stripeSignature(t, now, payload, c.Secret), payload, nil},
		{"two v1, the second matches", stripeSignature(t, now, payload, "whsec_old", c.Secret), payload, nil},
		{"two v1, the first matches", stripeSignature(t, now, payload, c.Secret, "whsec_next"), payload, nil},
		{"v0 and v1", stripeSignature(t, now, payload, c.Secret) + ",v0=" + opensslHMAC(t, "x", "y"), payload, nil},
		{"tampered", stripeSignature(t, now, payload, c.Secret), strings.Replace(payload, "cus_9", "cus_8", 1), webhook.ErrSignature},
		{"wrong secret only", stripeSignature(t, now, payload, "whsec_other"), payload, webhook.ErrSignature},
		{"outside the tolerance", stripeSignature(t, now.Add(-webhook.ToleranceDefault-time.Minute), payload, c.Secret), payload, webhook.ErrSignature},
		{"from the future", stripeSignature(t, now.Add(webhook.ToleranceDefault+time.Minute), payload, c.Secret), payload, webhook.ErrSignature},
		{"timestamp changed", strings.Replace(stripeSignature(t, now, payload, c.Secret), "t=", "t=1", 1), payload, webhook.ErrSignature},
		{"no timestamp", "v1=" + opensslHMAC(t, c.Secret, payload), payload, webhook.ErrSignature},
		{"missing", "", payload, webhook.ErrSignature},
		{"no event id", stripeSignature(t, now, `{"type":"x"}`, c.Secret), `{"type":"x"}`, webhook.ErrPayload},
		{"not JSON", stripeSignature(t, now, "id=1", c.Secret), "id=1", webhook.ErrPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.header != "" {
				h.Set("Stripe-Signature", tc.header)
			}
			d, err := c.Verify(h, []byte(tc.body), now)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "evt_1NG8Du2eZvKYlo2CUI79vXWy", d.ID)
			require.Equal(t, "hv:webhook:stripe:evt_1NG8Du2eZvKYlo2CUI79vXWy", d.Key, "the signed event id is the key")
		})
	}
	t.Run("a wider tolerance", func(t *testing.T) {
		c := c
		c.Tolerance = time.Hour
		h := http.Header{}
		h.Set("Stripe-Signature", stripeSignature(t, now.Add(-30*time.Minute), payload, c.Secret))
		_, err := c.Verify(h, []byte(payload), now)
		require.NoError(t, err)
	})
}

func TestGenericPointers(t *testing.T) {
	c := webhook.Config{Name: "g", Provider: webhook.Generic, Secret: "s3", Action: webhook.ActionSignalWithStart, Workflow: "w",
		Signal: "event", SignatureHeader: "X-Signature", KeyPointer: "/meta/delivery", WorkflowIDPointer: "/order/id"}
	require.NoError(t, c.Validate())
	for _, tc := range []struct {
		name, body, id, wfID string
		err                  error
	}{
		{"string and number", `{"meta":{"delivery":"d-1"},"order":{"id":42}}`, "d-1", "42", nil},
		{"escaped", `{"meta":{"delivery":7},"order":{"id":"o/1"}}`, "7", "o/1", nil},
		{"no key", `{"order":{"id":"o"}}`, "", "", webhook.ErrPayload},
		{"no workflow id", `{"meta":{"delivery":"d"}}`, "", "", webhook.ErrPayload},
		{"key is an object", `{"meta":{"delivery":{}},"order":{"id":"o"}}`, "", "", webhook.ErrPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, prefix := range []string{"", "sha256="} {
				h := http.Header{}
				h.Set("X-Signature", prefix+opensslHMAC(t, c.Secret, tc.body))
				d, err := c.Verify(h, []byte(tc.body), time.Now())
				if tc.err != nil {
					require.ErrorIs(t, err, tc.err)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, webhook.Delivery{ID: tc.id, WorkflowID: tc.wfID, Key: "hv:webhook:g:" + tc.id}, d)
			}
		})
	}
	t.Run("bad signature", func(t *testing.T) {
		h := http.Header{}
		h.Set("X-Signature", opensslHMAC(t, "other", "{}"))
		_, err := c.Verify(h, []byte("{}"), time.Now())
		require.ErrorIs(t, err, webhook.ErrSignature)
	})
}

func TestGenericTimestamp(t *testing.T) {
	c, err := webhook.Config{Name: "g", Provider: webhook.Generic, Secret: "s3", Action: webhook.ActionStart, Workflow: "w",
		SignatureHeader: "X-Signature", KeyPointer: "/id"}.WithDefaults(false)
	require.NoError(t, err)
	require.Equal(t, "Webhook-Timestamp", c.TimestampHeader, "a new generic receiver signs a timestamp")
	require.NoError(t, c.Validate())
	require.Equal(t, webhook.ToleranceDefault, c.ToleranceOrDefault())
	now := time.Unix(1_780_000_000, 0)
	const body = `{"id":"d-1"}`
	signed := func(ts, payload string) http.Header {
		h := http.Header{}
		h.Set("Webhook-Timestamp", ts)
		h.Set("X-Signature", "sha256="+opensslHMAC(t, c.Secret, ts+"."+payload))
		return h
	}
	unix := func(at time.Time) string { return fmt.Sprint(at.Unix()) }
	for _, tc := range []struct {
		name string
		h    http.Header
		err  error
	}{
		{"now", signed(unix(now), body), nil},
		{"within the tolerance", signed(unix(now.Add(-webhook.ToleranceDefault+time.Second)), body), nil},
		{"replayed after the tolerance", signed(unix(now.Add(-webhook.ToleranceDefault-time.Second)), body), webhook.ErrSignature},
		{"from the future", signed(unix(now.Add(webhook.ToleranceDefault+time.Second)), body), webhook.ErrSignature},
		{"timestamp changed after signing", func() http.Header {
			h := signed(unix(now.Add(-time.Hour)), body)
			h.Set("Webhook-Timestamp", unix(now))
			return h
		}(), webhook.ErrSignature},
		{"body-only signature", func() http.Header {
			h := signed(unix(now), body)
			h.Set("X-Signature", opensslHMAC(t, c.Secret, body))
			return h
		}(), webhook.ErrSignature},
		{"no timestamp", func() http.Header { h := signed(unix(now), body); h.Del("Webhook-Timestamp"); return h }(), webhook.ErrSignature},
		{"not a number", signed("soon", body), webhook.ErrSignature},
		{"signed", signed("+"+unix(now), body), webhook.ErrSignature},
		{"spaced", signed(" "+unix(now), body), webhook.ErrSignature},
		{"huge", signed("99999999999999999999999", body), webhook.ErrSignature},
		{"year 33658", signed("999999999999", body), webhook.ErrSignature},
		{"milliseconds", signed(fmt.Sprint(now.UnixMilli()), body), webhook.ErrSignature},
		{"NUL", signed(unix(now)+"\x00", body), webhook.ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := c.Verify(tc.h, []byte(body), now)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "hv:webhook:g:d-1", d.Key, "the key is the signed id, not the timestamp")
		})
	}
	t.Run("a wider tolerance", func(t *testing.T) {
		c := c
		c.Tolerance = time.Hour
		_, err := c.Verify(signed(unix(now.Add(-30*time.Minute)), body), []byte(body), now)
		require.NoError(t, err)
	})
	t.Run("a header of its own name", func(t *testing.T) {
		c := c
		c.TimestampHeader = "X-Sent-At"
		h := signed(unix(now), body)
		h.Set("X-Sent-At", h.Get("Webhook-Timestamp"))
		h.Del("Webhook-Timestamp")
		_, err := c.Verify(h, []byte(body), now)
		require.NoError(t, err)
	})
	t.Run("a receiver stored without a timestamp signs the body only", func(t *testing.T) {
		var old webhook.Config
		require.NoError(t, json.Unmarshal([]byte(`{"name":"g","provider":"generic","secret":"s3","action":"start","workflow":"w",
			"key_pointer":"/id","signature_header":"X-Signature","created_at":"2026-01-01T00:00:00Z"}`), &old))
		require.NoError(t, old.Validate())
		h := http.Header{}
		h.Set("X-Signature", opensslHMAC(t, old.Secret, body))
		_, err := old.Verify(h, []byte(body), now)
		require.NoError(t, err)
		require.Zero(t, old.ToleranceOrDefault())
	})
	t.Run("opting out", func(t *testing.T) {
		plain, err := webhook.Config{Name: "g", Provider: webhook.Generic, Secret: "s3", Action: webhook.ActionStart, Workflow: "w",
			SignatureHeader: "X-Signature", KeyPointer: "/id"}.WithDefaults(true)
		require.NoError(t, err)
		require.Empty(t, plain.TimestampHeader)
		_, err = c.WithDefaults(true)
		require.ErrorIs(t, err, webhook.ErrInvalidConfig, "no_timestamp with a timestamp_header")
		_, err = webhook.Config{Provider: webhook.GitHub}.WithDefaults(true)
		require.ErrorIs(t, err, webhook.ErrInvalidConfig, "no_timestamp on github")
		gh, err := webhook.Config{Provider: webhook.Stripe}.WithDefaults(false)
		require.NoError(t, err)
		require.Empty(t, gh.TimestampHeader, "only generic receivers get one")
	})
}

func TestLookup(t *testing.T) {
	doc := map[string]any{"a/b": 1, "m~n": 2, "l": []any{"x", "y"}, "": 3}
	for _, tc := range []struct {
		p    string
		want any
		ok   bool
	}{
		{"/a~1b", 1, true}, {"/m~0n", 2, true}, {"/l/1", "y", true}, {"/", 3, true},
		{"/l/2", nil, false}, {"/l/01", nil, false}, {"/l/-1", nil, false}, {"/zz", nil, false}, {"x", nil, false},
	} {
		t.Run(tc.p, func(t *testing.T) {
			v, ok := webhook.Lookup(doc, tc.p)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, v)
		})
	}
}

func TestValidate(t *testing.T) {
	base := webhook.Config{Name: "n", Provider: webhook.Stripe, Secret: "s", Action: webhook.ActionStart, Workflow: "w"}
	for _, tc := range []struct {
		name string
		mut  func(*webhook.Config)
	}{
		{"no name", func(c *webhook.Config) { c.Name = "" }},
		{"name with a slash", func(c *webhook.Config) { c.Name = "a/b" }},
		{"no secret", func(c *webhook.Config) { c.Secret = "" }},
		{"unknown provider", func(c *webhook.Config) { c.Provider = "paypal" }},
		{"unknown action", func(c *webhook.Config) { c.Action = "run" }},
		{"no workflow", func(c *webhook.Config) { c.Workflow = "" }},
		{"reserved workflow", func(c *webhook.Config) { c.Workflow = "hv:x" }},
		{"signal with start, no signal", func(c *webhook.Config) { c.Action, c.WorkflowIDPointer = webhook.ActionSignalWithStart, "/id" }},
		{"signal with start, no pointer", func(c *webhook.Config) { c.Action, c.Signal = webhook.ActionSignalWithStart, "s" }},
		{"a signal for a start", func(c *webhook.Config) { c.Signal = "s" }},
		{"bad pointer", func(c *webhook.Config) { c.WorkflowIDPointer = "id" }},
		{"negative tolerance", func(c *webhook.Config) { c.Tolerance = -time.Second }},
		{"tolerance over a day", func(c *webhook.Config) { c.Tolerance = 25 * time.Hour }},
		{"tolerance on github", func(c *webhook.Config) { c.Provider, c.Tolerance = webhook.GitHub, time.Minute }},
		{"key pointer on stripe", func(c *webhook.Config) { c.KeyPointer = "/id" }},
		{"generic without header", func(c *webhook.Config) { c.Provider, c.KeyPointer = webhook.Generic, "/id" }},
		{"generic without key", func(c *webhook.Config) { c.Provider, c.SignatureHeader = webhook.Generic, "X-Sig" }},
		{"timestamp header on stripe", func(c *webhook.Config) { c.TimestampHeader = "T" }},
		{"tolerance on generic without a timestamp", func(c *webhook.Config) {
			c.Provider, c.SignatureHeader, c.KeyPointer, c.Tolerance = webhook.Generic, "X-Sig", "/id", time.Minute
		}},
		{"timestamp header is the signature header", func(c *webhook.Config) {
			c.Provider, c.SignatureHeader, c.KeyPointer, c.TimestampHeader = webhook.Generic, "X-Sig", "/id", "x-sig"
		}},
		{"timestamp header with a colon", func(c *webhook.Config) {
			c.Provider, c.SignatureHeader, c.KeyPointer, c.TimestampHeader = webhook.Generic, "X-Sig", "/id", "T:1"
		}},
		{"generic tolerance over a day", func(c *webhook.Config) {
			c.Provider, c.SignatureHeader, c.KeyPointer, c.TimestampHeader, c.Tolerance = webhook.Generic, "X-Sig", "/id", "T", 25*time.Hour
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mut(&c)
			require.ErrorIs(t, c.Validate(), webhook.ErrInvalidConfig, fmt.Sprintf("%+v", c))
		})
	}
	require.NoError(t, base.Validate())
	require.Equal(t, webhook.RedactedSecret, base.Redacted().Secret)
	require.Equal(t, "s", base.Secret, "Redacted copies")
}
