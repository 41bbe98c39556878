// Package tlsconf loads the TLS material of a node (harvestd --tls-cert,
// --tls-key, --tls-ca) and builds the configurations of its hops: the
// HTTP API's server, the client that forwards to other nodes, and the raft
// transport's both ends. One certificate serves every hop; with a CA, node
// connections are mutual: the raft transport requires a client
// certificate signed by the CA, and the API verifies one when given (a
// user's client may come with a token alone).
//
// The material is reloadable (harvestd re-reads it on SIGHUP, Reload):
// the configurations read the current certificate and CA at each
// handshake, so a replaced certificate is served, presented and trusted
// from the next connection on, on every hop, while open connections stay
// up.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Sentinel errors.
var (
	// ErrNoCertificates: the CA file holds no PEM certificate.
	ErrNoCertificates = errors.New("no PEM certificate in the CA file")
	// errNoPeerCertificate: the peer presented no certificate.
	errNoPeerCertificate = errors.New("tls: the peer presented no certificate")
)

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

// Material is loaded TLS material, replaced as a whole by Reload.
type Material struct {
	files Files
	cur   atomic.Pointer[loaded]
}

// loaded is one reading of the files.
type loaded struct {
	cert *tls.Certificate
	ca   *x509.CertPool // nil: system roots
}

// Load reads f's files. Errors name the files, never their content.
func Load(f Files) (*Material, error) {
	m := &Material{files: f}
	if err := m.Reload(); err != nil {
		return nil, err
	}
	return m, nil
}

// Reload reads the files again and, when they are valid, serves them from
// the next handshake on; on an error the material in use stays.
func (m *Material) Reload() error {
	l, err := read(m.files)
	if err != nil {
		return err
	}
	m.cur.Store(l)
	return nil
}

// Leaf is the certificate in use (parsed), for logs and tests.
func (m *Material) Leaf() *x509.Certificate { return m.cur.Load().cert.Leaf }

func read(f Files) (*loaded, error) {
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, errors.New("tls: both a certificate and a key file are needed")
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: certificate %s, key %s: %w", f.CertFile, f.KeyFile, err)
	}
	l := &loaded{cert: &cert}
	if f.CAFile == "" {
		return l, nil
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("tls: read CA: %w", err)
	}
	l.ca = x509.NewCertPool()
	if !l.ca.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: CA file %s: %w", f.CAFile, ErrNoCertificates)
	}
	return l, nil
}

// Server is the configuration of a listener: clientAuth says what it asks
// of clients when a CA is set (without one it asks nothing). Each
// handshake takes the material in use at its start.
func (m *Material) Server(clientAuth tls.ClientAuthType) *tls.Config {
	c := m.server(m.cur.Load(), clientAuth)
	c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return m.server(m.cur.Load(), clientAuth), nil
	}
	return c
}

func (m *Material) server(l *loaded, clientAuth tls.ClientAuthType) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*l.cert}}
	if l.ca != nil {
		c.ClientCAs, c.ClientAuth = l.ca, clientAuth
	}
	return c
}

// Client is the configuration of a node dialing another: it presents this
// node's certificate in use and verifies the peer against the CA in use
// (the system roots without a CA file), its name included.
func (m *Material) Client() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return m.cur.Load().cert, nil }}
	if m.files.CAFile == "" {
		return c
	}
	// The CA may change on Reload: the peer is verified here, against the
	// CA of the moment, as the standard verification would (chain, usage,
	// expiry and name).
	c.InsecureSkipVerify = true
	c.VerifyConnection = m.verifyServer
	return c
}

func (m *Material) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errNoPeerCertificate
	}
	opts := x509.VerifyOptions{Roots: m.cur.Load().ca, DNSName: cs.ServerName, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}
