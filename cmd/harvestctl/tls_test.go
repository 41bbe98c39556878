package main

import (
	"bytes"
	"context"
	"crypto/tls"
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

// TestCertsCreate: the certificates harvestctl certs create writes serve a
// node that harvestctl --ca-cert then trusts; a second create and a missing
// directory are usage errors.
func TestCertsCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	ctl := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"harvestctl"}, args...), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, out := ctl("certs", "create", dir, "harvest1")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, filepath.Join(dir, "node.pem"))

	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "node.pem"), filepath.Join(dir, "node-key.pem"))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"workflows":[]}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	code, out = ctl("--addr", srv.URL, "--ca-cert", filepath.Join(dir, "ca.pem"), "workflow", "list")
	require.Equal(t, 0, code, out)

	code, out = ctl("certs", "create", dir)
	require.Equal(t, 2, code, "never overwrites: %s", out)
	require.Contains(t, out, "certificates exist")
	code, _ = ctl("certs", "create")
	require.Equal(t, 2, code, "no directory")
}
