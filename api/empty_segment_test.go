package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmptyPathSegments: a path with an empty or trailing segment gets the
// JSON error shape, never a redirect.
func TestEmptyPathSegments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := "0000aaaa-0000-4000-8000-000000000000"

	for _, tc := range []struct {
		name, method, path string
		status             int
		code, inMessage    string
	}{
		{"EmptySignalName", "POST", "/workflows/" + id + "/signal/", http.StatusNotFound, codeNoRoute, "no route"},
		{"ListWithTrailingSlash", "GET", "/workflows/", http.StatusNotFound, codeNoRoute, "no route"},
		{"EmptyWorkflowNameStart", "POST", "/workflows//start", http.StatusBadRequest, codeInvalidArgument, "workflow name"},
		{"EmptyExecutionIDSignal", "POST", "/workflows//signal/go", http.StatusBadRequest, codeInvalidArgument, "execution"},
		{"DescribeWithTrailingSlash", "GET", "/workflows/" + id + "/", http.StatusNotFound, codeNoRoute, "no route"},
		{"CaseFoldedPath", "GET", "/Workflows", http.StatusNotFound, codeNoRoute, "no route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.noRedirect(t, tc.method, tc.path)
			requireError(t, r, tc.status, tc.code)
			require.Contains(t, r.Body["error"], tc.inMessage)
			require.Empty(t, r.Header.Get("Location"))
		})
	}
}

// noRedirect sends a bodiless request and returns the first answer, a
// redirect included.
func (b *testBundle) noRedirect(t *testing.T, method, path string) response {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, nil)
	require.NoError(t, err)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return decodeResponse(t, res)
}
