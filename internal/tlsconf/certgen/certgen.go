// Package certgen makes a CA and one node certificate for a local or
// compose cluster (harvestctl certs create): ECDSA P-256 keys, a CA valid
// for a year, a node certificate valid for 90 days that names localhost,
// 127.0.0.1 and every host given, for server and client use (mutual TLS
// between nodes). Production clusters bring certificates of their own CA.
package certgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The files Create writes into its directory.
const (
	CAFile      = "ca.pem"
	CAKeyFile   = "ca-key.pem"
	NodeFile    = "node.pem"
	NodeKeyFile = "node-key.pem"
)

// Validity of what Create makes.
const (
	CAValidity   = 365 * 24 * time.Hour
	NodeValidity = 90 * 24 * time.Hour
)

var (
	// ErrExists is returned when the directory already holds a CA or node
	// certificate: Create never overwrites one.
	ErrExists = errors.New("certificates exist")
	// ErrHost is returned for an empty host name.
	ErrHost = errors.New("empty host")
)

// Create writes a CA and a node certificate naming hosts (names or IP
// addresses) into dir, created mode 0700 if missing; every file is mode
// 0600.
func Create(dir string, hosts []string, now time.Time) error {
	if err := checkFree(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caCert, caKey, err := newCA(now)
	if err != nil {
		return err
	}
	node, nodeKey, err := newNode(caCert, caKey, hosts, now)
	if err != nil {
		return err
	}
	return writeAll(dir, caCert.Raw, caKey, node, nodeKey)
}

// checkFree refuses a directory holding either certificate.
func checkFree(dir string) error {
	for _, f := range []string{CAFile, NodeFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%s in %s: %w", f, dir, ErrExists)
		}
	}
	return nil
}

func newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "harvest local CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(CAValidity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newNode(ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string, now time.Time) ([]byte, *ecdsa.PrivateKey, error) {
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "harvest node"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(NodeValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if err := addNames(tmpl, append([]string{"localhost", "127.0.0.1"}, hosts...)); err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	return der, key, err
}

// addNames puts each host into the certificate's IP or DNS names.
func addNames(tmpl *x509.Certificate, hosts []string) error {
	for _, h := range hosts {
		switch ip := net.ParseIP(h); {
		case h == "":
			return ErrHost
		case ip != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func writeAll(dir string, caDER []byte, caKey *ecdsa.PrivateKey, nodeDER []byte, nodeKey *ecdsa.PrivateKey) error {
	if err := writeKey(filepath.Join(dir, CAKeyFile), caKey); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, NodeKeyFile), nodeKey); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, NodeFile), "CERTIFICATE", nodeDER); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, CAFile), "CERTIFICATE", caDER)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

// writePEM writes a new file (O_EXCL: never over an existing one).
func writePEM(path, kind string, der []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: kind, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
