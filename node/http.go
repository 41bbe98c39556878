package node

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/engine"
)

// HTTP server timeouts. There is no write timeout: the result long-poll
// holds a response for up to api.ResultWaitMaxDefault.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// listen binds the HTTP address early, so gossip can advertise it.
func (n *Node) listen() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", n.cfg.HTTPAddr, err)
	}
	n.ln = ln
	return nil
}

// serve builds the API over the shard router and serves it.
func (n *Node) serve() error {
	r := n.router
	cfg := api.Config{
		MaxBodyBytes:     n.cfg.MaxBodyBytes,
		Limits:           n.cfg.Limits,
		ForwardTLS:       n.forwardTLS(),
		NodeCertRequired: n.tls != nil && n.cfg.TLS.CAFile != "",
		NodeID:           n.nodeID,
		Cluster:          clusterInfo{r},
		Gates:            nodeGates{n},
		Logger:           n.root, // api adds its component field
	}
	if n.admin != nil {
		cfg.Admin = catalogAdmin{n}
	}
	if n.webhooks != nil {
		cfg.Webhooks = n.webhooks
	}
	if n.activities != nil {
		cfg.HTTPActivities = n.activities
		cfg.OutboundURLs = engine.CallbackPolicy{Allow: n.cfg.CallbackAllowCIDRs}
		cfg.ActivityNames = n.reg
	}
	if n.flowLimits != nil {
		cfg.FlowLimits = n.flowLimits
	}
	if n.admin != nil {
		cfg.ScheduleCatalog = raftSchedules{n}
	}
	n.apiAuth(&cfg)
	handler, err := api.New(cfg, r)
	if err != nil {
		return fmt.Errorf("build http api: %w", err)
	}
	n.outbound.Bind(handler)
	n.api.Store(handler)
	ln := n.tlsListener(n.ln)
	httpLog := n.logger("http")
	n.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          stdlog.New(httpLog, "", 0),
	}
	n.serving = make(chan struct{})
	go n.runHTTP(n.http, ln, n.serving)
	return nil
}

// runHTTP serves until the server is shut down; any other end is a
// failure reported on Err.
func (n *Node) runHTTP(srv *http.Server, ln net.Listener, done chan struct{}) {
	defer close(done)
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return
	}
	select {
	case n.errc <- fmt.Errorf("http server: %w", err):
	default:
	}
}

// stopHTTP drains in-flight requests until ctx is done, then closes the
// remaining connections.
func (n *Node) stopHTTP(ctx context.Context) error {
	err := n.http.Shutdown(ctx)
	if err != nil {
		_ = n.http.Close()
		err = fmt.Errorf("drain http requests: %w", err)
	}
	<-n.serving
	n.log.Info().Msg("http server stopped")
	return err
}

// signNode makes req (its body body) a node request of this node to node
// to, acting for no token.
func (n *Node) signNode(req *http.Request, to string, body []byte) {
	api.SignNode(req, api.NodeSig{Key: n.signKey(), From: n.nodeID, To: to, Identity: auth.Anonymous,
		Body: body, Time: time.Now(), V1: n.cfg.NodeAuthV1})
}
