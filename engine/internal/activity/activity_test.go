package activity

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/internal/ssrf"
	"github.com/harvestd/harvest/engine/shardapi"
)

// TestHTTPActivityDialRefusal: the activities' client re-checks the
// address it dials, so a URL that passed its check cannot reach a refused
// address (a DNS rebind): 127.0.0.2 is outside the allow list.
func TestHTTPActivityDialRefusal(t *testing.T) {
	o := newActivityOutbound(ssrf.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://127.0.0.2:9/", nil)
	require.NoError(t, err)
	_, err = o.Do(req)
	require.ErrorIs(t, err, ssrf.ErrAddressRefused)
	require.NoError(t, o.CheckURL(context.Background(), "http://127.0.0.1:9/"))
	require.ErrorContains(t, o.CheckURL(context.Background(), "http://127.0.0.2:9/"), "refused")
}

func TestRetryableRecord(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"unavailable":    {shardapi.ErrUnavailable, true},
		"other":          {errors.New("write: broken pipe"), true},
		"canceled":       {context.Canceled, false},
		"deadline":       {context.DeadlineExceeded, false},
		"lease lost":     {&shardapi.OwnershipLostError{Shard: 1}, false},
		"not running":    {shardapi.ErrNotRunning, false},
		"wrapped cancel": {errors.Join(errors.New("commit"), context.Canceled), false},
	} {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, retryableRecord(tc.err)) })
	}
}
