package node

import (
	"crypto/tls"
	"net"
	"net/http"
)

// apiURL is the base URL of a node's API at addr.
func apiURL(secure bool, addr string) string {
	if secure {
		return "https://" + addr
	}
	return "http://" + addr
}

// tlsListener serves the API over TLS when the node has TLS material: a
// client certificate is verified when given (other nodes present theirs;
// a user's client may come with a bearer token alone).
func (n *Node) tlsListener(ln net.Listener) net.Listener {
	if n.tls == nil {
		return ln
	}
	return tls.NewListener(ln, n.tls.Server(tls.VerifyClientCertIfGiven))
}

// forwardTLS is the client configuration of this node's requests to
// other nodes (nil: plain HTTP).
func (n *Node) forwardTLS() *tls.Config {
	if n.tls == nil {
		return nil
	}
	return n.tls.Client()
}

// nodeClient sends this node's own requests to other nodes.
func (n *Node) nodeClient() *http.Client {
	if n.client == nil {
		return http.DefaultClient
	}
	return n.client
}

// newNodeClient is the client of a node with TLS material.
func newNodeClient(cfg *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	return &http.Client{Transport: t}
}

// ReloadTLS re-reads the node's certificate, key and CA files (harvestd
// does on SIGHUP): from the next connection on, the API serves the new
// certificate, forwarding and raft present it, and peers are verified
// against the new CA; open connections stay up. On an error the node
// keeps the material in use. Without TLS it does nothing.
func (n *Node) ReloadTLS() error {
	if n.tls == nil {
		return nil
	}
	if err := n.tls.Reload(); err != nil {
		return err
	}
	leaf := n.tls.Leaf()
	n.log.Info().Str("serial", leaf.SerialNumber.String()).Time("not_after", leaf.NotAfter).Msg("TLS certificate reloaded")
	return nil
}
