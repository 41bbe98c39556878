// Package webhooktest signs webhook deliveries the way the providers do,
// with openssl, so that tests never check the code under test against
// itself.
package webhooktest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// OpenSSLHMAC is the hex HMAC-SHA256 of data under secret, computed by
// `openssl dgst -sha256 -hmac <secret>`.
func OpenSSLHMAC(t testing.TB, secret, data string) string {
	t.Helper()
	cmd := exec.Command("openssl", "dgst", "-sha256", "-hmac", secret)
	cmd.Stdin = strings.NewReader(data)
	out, err := cmd.Output()
	require.NoError(t, err, "openssl dgst")
	// "SHA2-256(stdin)= <hex>" (OpenSSL 3) or "(stdin)= <hex>"
	_, hex, ok := strings.Cut(strings.TrimSpace(string(out)), "= ")
	require.True(t, ok, "openssl output %q", out)
	return hex
}

// OpenSSLSHA256 is the hex SHA-256 of data, computed by
// `openssl dgst -sha256`.
func OpenSSLSHA256(t testing.TB, data string) string {
	t.Helper()
	cmd := exec.Command("openssl", "dgst", "-sha256")
	cmd.Stdin = strings.NewReader(data)
	out, err := cmd.Output()
	require.NoError(t, err, "openssl dgst")
	_, hex, ok := strings.Cut(strings.TrimSpace(string(out)), "= ")
	require.True(t, ok, "openssl output %q", out)
	return hex
}

// StripeSignature is a Stripe-Signature header as Stripe documents it:
// t=<unix>, then one v1 per secret, each the HMAC of "<t>.<payload>".
func StripeSignature(t testing.TB, at time.Time, payload string, secrets ...string) string {
	t.Helper()
	ts := strconv.FormatInt(at.Unix(), 10)
	parts := []string{"t=" + ts}
	for _, s := range secrets {
		parts = append(parts, "v1="+OpenSSLHMAC(t, s, ts+"."+payload))
	}
	return strings.Join(parts, ",")
}

// GitHubSignature is an X-Hub-Signature-256 header for payload.
func GitHubSignature(t testing.TB, secret, payload string) string {
	t.Helper()
	return "sha256=" + OpenSSLHMAC(t, secret, payload)
}
