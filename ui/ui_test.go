package ui

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	Handler("/ui/").ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

func TestHandler(t *testing.T) {
	t.Run("Assets", func(t *testing.T) {
		for _, c := range []struct{ path, ctype string }{
			{"/ui/", "text/html"}, {"/ui/index.html", "text/html"}, {"/ui/style.css", "text/css"}, {"/ui/js/app.js", "text/javascript"},
		} {
			w := get(t, c.path)
			require.Equal(t, http.StatusOK, w.Code, c.path)
			require.True(t, strings.HasPrefix(w.Header().Get("Content-Type"), c.ctype), "%s: %s", c.path, w.Header().Get("Content-Type"))
			require.Equal(t, ContentSecurityPolicy, w.Header().Get("Content-Security-Policy"), c.path)
			require.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		for _, p := range []string{"/ui/nope.js", "/ui/js/", "/ui/js", "/ui/../ui.go", "/ui/%2e%2e/ui.go", "/ui/js/../../ui.go", "/ui/%00"} {
			w := get(t, p)
			require.Equal(t, http.StatusNotFound, w.Code, p)
			var body map[string]string
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), p)
			require.Equal(t, "not_found", body["code"])
		}
	})
}

// TestPolicy checks the page keeps to its security design: a CSP without
// inline script or other origins, and assets that never store the token,
// never build markup from text and never use EventSource (which cannot
// send Authorization).
func TestPolicy(t *testing.T) {
	require.Contains(t, ContentSecurityPolicy, "frame-ancestors 'none'")
	require.Contains(t, ContentSecurityPolicy, "script-src 'self'")
	require.NotContains(t, ContentSecurityPolicy, "unsafe")
	inline := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]|<script>|\son[a-z]+=|style=`)
	banned := []string{"localStorage", "sessionStorage", "document.cookie", "innerHTML", "outerHTML", "insertAdjacentHTML", "EventSource", "eval(", "http://", "https://"}
	n := 0
	require.NoError(t, fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(assets, p)
		require.NoError(t, err)
		n++
		if strings.HasSuffix(p, ".html") {
			require.False(t, inline.Match(raw), "%s has inline script or style", p)
		}
		for _, b := range banned {
			require.NotContains(t, string(raw), b, p)
		}
		return nil
	}))
	require.GreaterOrEqual(t, n, 8)
}
