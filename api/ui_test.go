package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/ui"
)

func TestWhoami(t *testing.T) {
	b := setupAuth(t)
	for _, scope := range []string{"read", "write", "admin"} {
		r := b.as(t, scope, "GET", "/whoami", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, scope, r.Body["scope"])
		require.Equal(t, true, r.Body["auth"])
		require.NotEmpty(t, r.Body["token_id"])
	}
	requireError(t, b.as(t, "none", "GET", "/whoami", nil), http.StatusUnauthorized, codeUnauthenticated)
	t.Run("AuthOff", func(t *testing.T) {
		r := setup(t).do(t, "GET", "/whoami", nil)
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, false, r.Body["auth"])
		require.Equal(t, "admin", r.Body["scope"])
	})
}

func TestUIServed(t *testing.T) {
	b := setupAuth(t)
	r := b.send(t, "none", "GET", "/ui/")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, ui.ContentSecurityPolicy, r.Header.Get("Content-Security-Policy"))
	require.Contains(t, string(r.Raw), `<script type="module" src="js/app.js">`)
	requireError(t, b.send(t, "none", "GET", "/ui/nope.js"), http.StatusNotFound, codeNotFound)
	req, err := http.NewRequest("GET", b.url[:len(b.url)-len(BasePath)]+"/ui", nil)
	require.NoError(t, err)
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.Equal(t, UIPath, res.Header.Get("Location"))
}
