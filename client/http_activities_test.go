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
	"github.com/harvestd/harvest/internal/activitystore"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestHTTPActivities(t *testing.T) {
	t.Parallel()
	store, err := activitystore.Load(context.Background(), pgtest.NewPool(t))
	require.NoError(t, err)
	b := setupServerWith(t, func(e *engine.Engine) api.Config {
		return api.Config{Gates: e, HTTPActivities: store, ActivityNames: e.Registry()}
	})
	const secret = "Bearer sk_client_test"
	req := client.RegisterHTTPActivityRequest{Name: "charge", URL: "https://93.184.215.14/charge",
		Headers: map[string]string{"Authorization": secret}, Timeout: 30 * time.Second,
		Retry: &client.ActivityRetry{MaxAttempts: 4, InitialInterval: 2 * time.Second}}

	created, err := b.api.RegisterHTTPActivity(ctxT(t), req)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": "[redacted]"}, created.Headers)
	require.Equal(t, "30s", created.Timeout)
	require.Equal(t, &client.HTTPActivityRetry{MaxAttempts: 4, InitialInterval: "2s"}, created.Retry)
	require.NotContains(t, string(created.Raw), secret)

	_, err = b.api.RegisterHTTPActivity(ctxT(t), req)
	require.NoError(t, err, "the same activity again")
	other := req
	other.URL = "https://93.184.215.14/other"
	_, err = b.api.RegisterHTTPActivity(ctxT(t), other)
	require.ErrorIs(t, err, client.ErrConflict)
	_, err = b.api.RegisterHTTPActivity(ctxT(t), client.RegisterHTTPActivityRequest{Name: "x"})
	require.ErrorIs(t, err, client.ErrInvalid)

	list, err := b.api.HTTPActivities(ctxT(t))
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "charge", list[0].Name)
	require.NotContains(t, string(list[0].Raw), secret)

	require.NoError(t, b.api.DeleteHTTPActivity(ctxT(t), "charge"))
	err = b.api.DeleteHTTPActivity(ctxT(t), "charge")
	require.True(t, errors.Is(err, client.ErrNotFound), "%v", err)
}
