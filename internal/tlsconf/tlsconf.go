// Package tlsconf loads the TLS material of a node (harvestd --tls-cert,
// --tls-key, --tls-ca) and builds the configurations of its hops: the
// HTTP API's server, the client that forwards to other nodes, and the raft
// transport's both ends. One certificate serves every hop; with a CA, node
// connections are mutual: the raft transport requires a client
// certificate signed by the CA, and the API verifies one when given (a
// user's client may come with a token alone).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ErrNoCertificates: the CA file holds no PEM certificate.
var ErrNoCertificates = errors.New("no PEM certificate in the CA file")

// Files names a node's TLS material.
type Files struct {
	// CertFile and KeyFile are the node's PEM certificate (chain) and
	// key; both or neither.
	CertFile string
	KeyFile  string
	// CAFile holds the PEM certificates that sign the nodes'
	// certificates: peers are verified against it (mutual TLS between
	// nodes). Empty: the system roots verify, and no client certificate
	// is asked for.
	CAFile string
}

// Material is loaded TLS material.
type Material struct {
	cert tls.Certificate
	ca   *x509.CertPool // nil: system roots
}

// Load reads f's files. Errors name the files, never their content.
func Load(f Files) (*Material, error) {
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, errors.New("tls: both a certificate and a key file are needed")
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: certificate %s, key %s: %w", f.CertFile, f.KeyFile, err)
	}
	m := &Material{cert: cert}
	if f.CAFile == "" {
		return m, nil
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("tls: read CA: %w", err)
	}
	m.ca = x509.NewCertPool()
	if !m.ca.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: CA file %s: %w", f.CAFile, ErrNoCertificates)
	}
	return m, nil
}

// Server is the configuration of a listener: clientAuth says what it asks
// of clients when a CA is set (without one it asks nothing).
func (m *Material) Server(clientAuth tls.ClientAuthType) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{m.cert}}
	if m.ca != nil {
		c.ClientCAs, c.ClientAuth = m.ca, clientAuth
	}
	return c
}

// Client is the configuration of a node dialing another: it verifies the
// peer against the CA and presents this node's certificate.
func (m *Material) Client() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: m.ca, Certificates: []tls.Certificate{m.cert}}
}
