package admin

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/webhook"
)

func TestWebhookCommands(t *testing.T) {
	hook := webhook.Config{Name: "payments", Provider: webhook.Stripe, Secret: "whsec_x", Action: webhook.ActionStart, Workflow: "pay"}
	setup := func(t *testing.T) (*fsm, *fsmBundle) {
		t.Helper()
		f, b := testFSM(t)
		b.mustApply(t, f, PutWebhook{Webhook: hook, At: at(0)})
		return f, b
	}
	t.Run("PutIsPublished", func(t *testing.T) {
		f, _ := setup(t)
		got := f.catalog().Webhooks["payments"]
		require.True(t, got.Same(hook))
		require.True(t, got.CreatedAt.Equal(at(0)), "created at the command's time")
	})
	t.Run("PutAgainChangesNothing", func(t *testing.T) {
		f, b := setup(t)
		require.NoError(t, b.apply(t, f, PutWebhook{Webhook: hook, At: at(time.Hour)}))
		require.True(t, f.catalog().Webhooks["payments"].CreatedAt.Equal(at(0)))
	})
	t.Run("SameNameOtherConfigIsRefused", func(t *testing.T) {
		f, b := setup(t)
		other := hook
		other.Secret = "whsec_other"
		require.ErrorIs(t, b.apply(t, f, PutWebhook{Webhook: other, At: at(1)}), webhook.ErrExists)
		require.Equal(t, "whsec_x", f.catalog().Webhooks["payments"].Secret)
	})
	t.Run("Invalid", func(t *testing.T) {
		f, b := setup(t)
		require.ErrorIs(t, b.apply(t, f, PutWebhook{Webhook: webhook.Config{Name: "x"}, At: at(1)}), webhook.ErrInvalidConfig)
		require.ErrorIs(t, b.apply(t, f, DeleteWebhook{At: at(1)}), ErrInvalidCommand)
	})
	t.Run("Delete", func(t *testing.T) {
		f, b := setup(t)
		before := f.catalog()
		b.mustApply(t, f, DeleteWebhook{Name: "payments", At: at(1)})
		require.Empty(t, f.catalog().Webhooks)
		require.Contains(t, before.Webhooks, "payments", "the published copy is not shared")
		require.ErrorIs(t, b.apply(t, f, DeleteWebhook{Name: "payments", At: at(2)}), webhook.ErrUnknown)
	})
	t.Run("EncodingRoundTrip", func(t *testing.T) {
		for _, cmd := range []Command{PutWebhook{Webhook: hook, At: at(0)}, DeleteWebhook{Name: "payments", At: at(1)}} {
			data, err := encodeCommand(cmd)
			require.NoError(t, err)
			got, err := decodeCommand(data)
			require.NoError(t, err)
			require.Equal(t, cmd, got)
		}
	})
	t.Run("SnapshotRoundTrip", func(t *testing.T) {
		f, _ := setup(t)
		snap, err := f.Snapshot()
		require.NoError(t, err)
		sink := &memSink{}
		require.NoError(t, snap.Persist(sink))
		g, _ := testFSM(t)
		require.NoError(t, g.Restore(io.NopCloser(&sink.buf)))
		require.Equal(t, f.catalog().Webhooks, g.catalog().Webhooks)
		require.Equal(t, "whsec_x", g.catalog().Webhooks["payments"].Secret, "a restored node verifies with the secret")
	})
}
