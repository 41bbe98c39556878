package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCACert: --ca-cert makes harvestctl trust a node whose certificate
// that CA signed; without it the same node is refused.
func TestCACert(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"workflows":[]}`))
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	ctl := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"harvestctl", "--addr", srv.URL}, args...), &out, &errOut)
		return code, errOut.String()
	}
	code, stderr := ctl("--ca-cert", ca, "workflow", "list")
	require.Equal(t, 0, code, stderr)
	code, stderr = ctl("workflow", "list")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "certificate")
	code, _ = ctl("--ca-cert", filepath.Join(t.TempDir(), "missing.pem"), "workflow", "list")
	require.Equal(t, 2, code, "a usage error")
}
