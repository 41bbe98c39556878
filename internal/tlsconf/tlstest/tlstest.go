// Package tlstest makes a CA and certificates for tests, written to a
// test's temporary directory: nothing generated is ever committed.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/tlsconf"
)

// CA is a test certificate authority.
type CA struct {
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA certificate's PEM file.
	File string
}

// NewCA makes a CA in t's temporary directory, valid for two days (a
// long chaos run outlasts an hour).
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca := &CA{dir: t.TempDir(), cert: cert, key: key}
	ca.File = ca.write(t, name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Node makes a certificate for 127.0.0.1 and localhost, valid until
// notAfter, and returns the node's files (the CA's included).
func (ca *CA) Node(t testing.TB, name string, notAfter time.Time) tlsconf.Files {
	t.Helper()
	return ca.NodeFor(t, name, notAfter, net.ParseIP("127.0.0.1"))
}

// NodeFor is Node for the given IP addresses (and localhost).
func (ca *CA) NodeFor(t testing.TB, name string, notAfter time.Time, ips ...net.IP) tlsconf.Files {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		DNSNames: []string{"localhost"}, IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	raw, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return tlsconf.Files{CertFile: ca.write(t, name+".pem", "CERTIFICATE", der),
		KeyFile: ca.write(t, name+"-key.pem", "EC PRIVATE KEY", raw), CAFile: ca.File}
}

func (ca *CA) write(t testing.TB, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(ca.dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
	return path
}
