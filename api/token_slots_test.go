package api

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

// sendRequest sends req, which stays in flight until the test ends.
func (h *hold) sendRequest(req *http.Request) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if res, err := h.client.Do(req.WithContext(h.ctx)); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
}

// refusedLongLived asserts a long-lived GET of cred is refused with 429
// too_many_long_polls, naming the cap and Retry-After: 1; an admitted
// one fails the test at once rather than hang.
func (b *authBundle) refusedLongLived(t *testing.T, cred, path string, limit int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", b.tokens[cred])
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "%s was admitted", path)
	r := decodeResponse(t, res)
	requireError(t, r, http.StatusTooManyRequests, codeTooManyLongPolls)
	require.Equal(t, "1", res.Header.Get("Retry-After"), path)
	require.EqualValues(t, limit, r.Body["max_per_token"], "the body names the cap: %s", r.Raw)
}

func TestLongLivedPerToken(t *testing.T) {
	setup := func(t *testing.T, perToken int) (*authBundle, string, *hold) {
		b := setupAuth(t, withLimits(Limits{MaxLongLivedPerToken: perToken}))
		r := b.as(t, "write", "POST", "/workflows/block/start", map[string]any{})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		return b, r.Body["execution_id"].(string), newHold(t)
	}
	t.Run("OneOverTheCapGets429StreamsAndLongPollsAlike", func(t *testing.T) {
		b, id, h := setup(t, 2)
		h.send("GET", b.url+"/workflows/"+id+"/events/stream", b.tokens["read"], nil)
		h.send("GET", b.url+"/workflows/"+id+"/result?wait=25s", b.tokens["read"], nil)
		requireInFlight(t, b.server.shedder.long, 2)
		for _, path := range []string{"/workflows/" + id + "/events/stream", "/workflows/" + id + "/result?wait=5s"} {
			b.refusedLongLived(t, "read", path, 2)
		}
		require.Equal(t, http.StatusNoContent, b.as(t, "read", "GET", "/workflows/"+id+"/result", nil).Status,
			"an ordinary request of the same token is served")
		h.send("GET", b.url+"/workflows/"+id+"/events/stream", b.tokens["write"], nil)
		requireInFlight(t, b.server.shedder.long, 3)
	})
	t.Run("AdminTokensAreCappedToo", func(t *testing.T) {
		b, id, h := setup(t, 1)
		h.send("GET", b.url+"/workflows/"+id+"/events/stream", b.tokens["admin"], nil)
		requireInFlight(t, b.server.shedder.long, 1)
		b.refusedLongLived(t, "admin", "/workflows/"+id+"/events/stream", 1)
	})
	t.Run("ASlotIsGivenBackWhenTheRequestEnds", func(t *testing.T) {
		b, id, _ := setup(t, 1)
		for range 3 {
			r := b.as(t, "read", "GET", "/workflows/"+id+"/result?wait=10ms", nil)
			require.Equal(t, http.StatusNoContent, r.Status, "body %s", r.Raw)
		}
		requireError(t, b.as(t, "read", "GET", "/workflows/"+id+"/events/stream", nil, lastEventIDHeader, "x"),
			http.StatusBadRequest, codeInvalidArgument)
		require.Empty(t, b.server.shedder.perToken.held, "refused and finished requests hold nothing")
	})
	t.Run("ForwardedRequestsCountOnTheForwardingNodeOnly", func(t *testing.T) {
		b, id, h := setup(t, 1)
		h.send("GET", b.url+"/workflows/"+id+"/events/stream", b.tokens["read"], nil)
		requireInFlight(t, b.server.shedder.long, 1)
		who := auth.Identity{TokenID: b.tokenID(t, "read"), Scope: auth.ScopeRead}
		for range 2 {
			h.sendRequest(b.nodeRequest(t, b.key, time.Now(), who, "GET", "/workflows/"+id+"/events/stream", ""))
		}
		requireInFlight(t, b.server.shedder.long, 3)
		b.refusedLongLived(t, "read", "/workflows/"+id+"/events/stream", 1)
	})
}
