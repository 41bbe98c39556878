package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/webhooktest"
)

// TestWebhookCommands drives webhook create, list and delete against a
// real node keeping its receivers in its shard database, and a Stripe
// delivery to the receiver made. Subtests run in order.
func TestWebhookCommands(t *testing.T) {
	b := setupAuthNode(t)
	const secret = "whsec_ctl_test_secret"
	t.Setenv("HARVEST_WEBHOOK_SECRET", secret)

	t.Run("Create", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "webhook", "create", "payments", "--provider", "stripe", "--workflow", "order", "--tolerance", "2m")...)
		require.Equal(t, "/api/harvest/webhooks/payments", cell(t, table, "Path"))
		require.Equal(t, "stripe", cell(t, table, "Provider"))
		require.Equal(t, "2m0s", cell(t, table, "Tolerance"))
		require.NotContains(t, table, secret)
		m := b.okJSON(t, b.as(b.admin, "webhook", "create", "payments", "--provider", "stripe", "--workflow", "order", "--tolerance", "2m")...)
		require.Equal(t, "[redacted]", m["secret"], "the same receiver again")
	})
	t.Run("CreateNeedsASecret", func(t *testing.T) {
		t.Setenv("HARVEST_WEBHOOK_SECRET", "")
		r := b.ctl(t, b.as(b.admin, "webhook", "create", "x", "--provider", "github", "--workflow", "order")...)
		require.Equal(t, exitUsage, r.code, "stderr: %s", r.stderr)
	})
	t.Run("ListRedacts", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "webhook", "list")...)
		require.Len(t, rows(table, "payments"), 1, table)
		require.NotContains(t, table, secret)
		m := b.okJSON(t, b.as(b.admin, "webhook", "list")...)
		require.Equal(t, "[redacted]", m["webhooks"].([]any)[0].(map[string]any)["secret"])
	})
	t.Run("DeliveryStartsOnce", func(t *testing.T) {
		const event = `{"id":"evt_ctl","order_id":"o-1","amount_cents":100,"customer_id":"c-1"}`
		post := func(sig string) int {
			req, err := http.NewRequest(http.MethodPost, "http://"+b.url+"/api/harvest/webhooks/payments", strings.NewReader(event))
			require.NoError(t, err)
			req.Header.Set("Stripe-Signature", sig)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			return res.StatusCode
		}
		require.Equal(t, http.StatusCreated, post(webhooktest.StripeSignature(t, time.Now(), event, secret)))
		require.Equal(t, http.StatusOK, post(webhooktest.StripeSignature(t, time.Now(), event, secret)), "a redelivery")
		require.Equal(t, http.StatusUnauthorized, post(webhooktest.StripeSignature(t, time.Now().Add(-3*time.Minute), event, secret)), "outside --tolerance")
		require.Equal(t, http.StatusUnauthorized, post(webhooktest.StripeSignature(t, time.Now(), event, "whsec_wrong")))
	})
	post := func(t *testing.T, name, body string, headers ...string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+b.url+"/api/harvest/webhooks/"+name, strings.NewReader(body))
		require.NoError(t, err)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		return res.StatusCode
	}
	t.Run("GenericSignsATimestampByDefault", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "webhook", "create", "orders", "--provider", "generic", "--workflow", "order",
			"--key-pointer", "/order_id", "--signature-header", "X-Signature")...)
		require.Equal(t, "Webhook-Timestamp", cell(t, table, "Timestamp header"))
		require.Equal(t, "5m0s", cell(t, table, "Tolerance"))
		const event = `{"order_id":"o-ts","amount_cents":100,"customer_id":"c-1"}`
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		require.Equal(t, http.StatusCreated, post(t, "orders", event, "Webhook-Timestamp", ts,
			"X-Signature", webhooktest.OpenSSLHMAC(t, secret, ts+"."+event)))
		require.Equal(t, http.StatusUnauthorized, post(t, "orders", event, "X-Signature", webhooktest.OpenSSLHMAC(t, secret, event)),
			"a body-only signature")
	})
	t.Run("NoTimestampSignsTheBodyOnly", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "webhook", "create", "plain", "--provider", "generic", "--workflow", "order",
			"--key-pointer", "/order_id", "--signature-header", "X-Signature", "--no-timestamp")...)
		require.Equal(t, "- (signs the body only)", cell(t, table, "Timestamp header"))
		const event = `{"order_id":"o-plain","amount_cents":100,"customer_id":"c-1"}`
		require.Equal(t, http.StatusCreated, post(t, "plain", event, "X-Signature", webhooktest.OpenSSLHMAC(t, secret, event)))
	})
	t.Run("NoTimestampExcludesTimestampHeader", func(t *testing.T) {
		r := b.ctl(t, b.as(b.admin, "webhook", "create", "x", "--provider", "generic", "--workflow", "order",
			"--key-pointer", "/id", "--signature-header", "X-Signature", "--no-timestamp", "--timestamp-header", "X-At")...)
		require.Equal(t, exitUsage, r.code, "stderr: %s", r.stderr)
		r = b.ctl(t, b.as(b.admin, "webhook", "create", "x", "--provider", "stripe", "--workflow", "order", "--no-timestamp")...)
		require.Equal(t, exitFailure, r.code, "stderr: %s", r.stderr)
		require.Contains(t, r.stderr, "no_timestamp is for provider generic only")
	})
	t.Run("Delete", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "webhook", "delete", "payments")...)
		require.Equal(t, "payments", cell(t, table, "Deleted"))
		r := b.ctl(t, b.as(b.admin, "webhook", "delete", "payments")...)
		require.Equal(t, exitFailure, r.code)
		require.Equal(t, "error: webhook payments: unknown webhook (not_found, HTTP 404)\n", r.stderr)
	})
}
