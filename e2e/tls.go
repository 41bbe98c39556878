package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/harvestd/harvest/internal/tlsconf"
)

// TLS is a run's certificates when the suite runs with TLS on
// (HARVEST_E2E_TLS=1, scripts/chaos.sh --tls): every node serves its API,
// forwards, runs raft and answers node requests with Files (harvestd
// --tls-cert, --tls-key, --tls-ca: mutual TLS between nodes), and the
// suite's clients trust the CA, as a user's harvestctl --ca-cert does.
type TLS struct {
	Files  tlsconf.Files
	Client *tls.Config
}

// NewTLS reads the CA of files for the suite's clients.
func NewTLS(files tlsconf.Files) (*TLS, error) {
	pem, err := os.ReadFile(files.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no CA certificate in %s", files.CAFile)
	}
	return &TLS{Files: files, Client: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, nil
}

// scheme is the URL scheme of the nodes' API.
func (t *TLS) scheme() string {
	if t == nil {
		return "http"
	}
	return "https"
}

// args are the nodes' TLS flags (none without TLS).
func (t *TLS) args() []string {
	if t == nil {
		return nil
	}
	return []string{"--tls-cert", t.Files.CertFile, "--tls-key", t.Files.KeyFile, "--tls-ca", t.Files.CAFile}
}

// clientConfig is what the suite's clients dial with (nil without TLS).
func (t *TLS) clientConfig() *tls.Config {
	if t == nil {
		return nil
	}
	return t.Client
}

// adminClient is for the suite's admin and readiness calls (the workload
// has its own).
func (t *TLS) adminClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: t.clientConfig()}}
}
