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
