package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/internal/webhookstore"
)

func TestWebhooks(t *testing.T) {
	t.Parallel()
	store, err := webhookstore.Load(context.Background(), pgtest.NewPool(t))
	require.NoError(t, err)
	b := setupServerWith(t, func(e *engine.Engine) api.Config { return api.Config{Gates: e, Webhooks: store} })
	req := client.CreateWebhookRequest{Name: "payments", Provider: client.WebhookStripe, Secret: "whsec_client_test",
		Action: client.WebhookStart, Workflow: "approval", Tolerance: 10 * time.Minute}

	created, err := b.api.CreateWebhook(ctxT(t), req)
	require.NoError(t, err)
	require.Equal(t, "[redacted]", created.Secret)
	require.Equal(t, "10m0s", created.Tolerance)
	require.Equal(t, "/api/harvest/webhooks/payments", created.Path)
	require.NotContains(t, string(created.Raw), req.Secret)

	_, err = b.api.CreateWebhook(ctxT(t), req)
	require.NoError(t, err, "the same receiver again")
	other := req
	other.Secret = "whsec_other"
	_, err = b.api.CreateWebhook(ctxT(t), other)
	require.ErrorIs(t, err, client.ErrConflict)
	_, err = b.api.CreateWebhook(ctxT(t), client.CreateWebhookRequest{Name: "x"})
	require.ErrorIs(t, err, client.ErrInvalid)

	list, err := b.api.Webhooks(ctxT(t))
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "payments", list[0].Name)
	require.NotContains(t, string(list[0].Raw), req.Secret)

	t.Run("GenericSignsATimestampByDefault", func(t *testing.T) {
		g := client.CreateWebhookRequest{Name: "orders", Provider: client.WebhookGeneric, Secret: "generic_client_test",
			Action: client.WebhookStart, Workflow: "approval", KeyPointer: "/id", SignatureHeader: "X-Signature"}
		w, err := b.api.CreateWebhook(ctxT(t), g)
		require.NoError(t, err)
		require.Equal(t, "Webhook-Timestamp", w.TimestampHeader)
		require.Equal(t, "5m0s", w.Tolerance)
	})
	t.Run("NoTimestampSignsTheBodyOnly", func(t *testing.T) {
		g := client.CreateWebhookRequest{Name: "legacy-sender", Provider: client.WebhookGeneric, Secret: "generic_client_test",
			Action: client.WebhookStart, Workflow: "approval", KeyPointer: "/id", SignatureHeader: "X-Signature", NoTimestamp: true}
		w, err := b.api.CreateWebhook(ctxT(t), g)
		require.NoError(t, err)
		require.Empty(t, w.TimestampHeader)
		require.Empty(t, w.Tolerance)
		_, err = b.api.CreateWebhook(ctxT(t), g)
		require.NoError(t, err, "the same receiver again")
		g.NoTimestamp = false
		_, err = b.api.CreateWebhook(ctxT(t), g)
		require.ErrorIs(t, err, client.ErrConflict, "without NoTimestamp it is another receiver")
	})
	t.Run("NoTimestampWithAHeaderIsInvalid", func(t *testing.T) {
		g := client.CreateWebhookRequest{Name: "x", Provider: client.WebhookGeneric, Secret: "s", Action: client.WebhookStart,
			Workflow: "approval", KeyPointer: "/id", SignatureHeader: "X-Signature", NoTimestamp: true, TimestampHeader: "X-At"}
		_, err := b.api.CreateWebhook(ctxT(t), g)
		require.ErrorIs(t, err, client.ErrInvalid)
	})
	for _, name := range []string{"orders", "legacy-sender"} {
		require.NoError(t, b.api.DeleteWebhook(ctxT(t), name))
	}

	require.NoError(t, b.api.DeleteWebhook(ctxT(t), "payments"))
	err = b.api.DeleteWebhook(ctxT(t), "payments")
	require.True(t, errors.Is(err, client.ErrNotFound), "%v", err)
}
