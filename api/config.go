package api

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of Config.
const (
	// MaxBodyBytesDefault is the request body limit (1 MiB).
	MaxBodyBytesDefault = 1 << 20
	// ResultWaitMaxDefault caps the result long-poll.
	ResultWaitMaxDefault = 30 * time.Second
	// BodyReadTimeoutDefault bounds reading a request body.
	BodyReadTimeoutDefault = 30 * time.Second
	// StreamHeartbeatDefault is the event stream's longest silence.
	StreamHeartbeatDefault = 15 * time.Second
)

// Config configures the HTTP API. Zero fields take the defaults above.
type Config struct {
	// MaxBodyBytes limits request bodies; larger ones get 413.
	MaxBodyBytes int64
	// ResultWaitMax caps ?wait= of the result route and of starts. At
	// most half of forwardTimeout (60 s): a forwarded start that waits
	// must be answered before the forwarding node gives up on it.
	ResultWaitMax time.Duration
	// BodyReadTimeout bounds reading a request body, from the end of its
	// headers: a body not fully read by then is answered 408 and its
	// connection closed. Responses are not bounded (long-polls hold them).
	BodyReadTimeout time.Duration
	// StreamHeartbeat is the longest silence of an event stream: a
	// comment line (": keep-alive") then keeps proxies and the forwarding
	// node from timing it out. A forwarding node takes an owner silent
	// for twice this plus 5 s for lost, so every node of a cluster uses
	// the same value (node sets none: the default).
	StreamHeartbeat time.Duration
	// NodeID names this node in the forwarding header.
	NodeID string
	// Cluster answers GET /cluster/members; nil lists no members.
	Cluster ClusterView
	// Gates serves the /admin/gates routes; nil answers them with 404.
	Gates Gates
	// Admin serves the /admin routes (shard catalog, raft peers); nil
	// answers them with 404 (a node on static shards).
	Admin Admin
	// Verifier checks clients' bearer tokens; nil turns authentication
	// off: every client may do everything (a dev node on loopback).
	Verifier Verifier
	// Tokens serves the /admin/tokens routes; nil answers them with 404.
	Tokens TokenAdmin
	// Webhooks serves the /admin/webhooks routes and the webhook
	// receivers; nil answers them with 404.
	Webhooks Webhooks
	// HTTPActivities serves the /admin/activities routes (HTTP activities
	// registered at run time); nil answers them with 404.
	HTTPActivities HTTPActivities
	// FlowLimits serves the /admin/limits routes (flow control limits set
	// at run time); nil answers them with 404.
	FlowLimits FlowLimits
	// OutboundURLs checks an HTTP activity's URL before it is registered:
	// the engines' outbound address rules (engine.CallbackPolicy); nil:
	// the rules without an allow list.
	OutboundURLs URLChecker
	// ActivityNames are the activities registered in Go on this node
	// (its *harvest.Registry): an HTTP activity may not take one of their
	// names. Nil: no such check.
	ActivityNames ActivityNames
	// ScheduleCatalog keeps the schedules' definitions of a cluster (the
	// raft catalog); nil: the schedules shard keeps them.
	ScheduleCatalog ScheduleCatalog
	// NodeKey signs and verifies requests between nodes (derived from the
	// cluster key, clusterkey.LabelHTTP). Nil: this node neither forwards
	// with a credential nor accepts node requests (a standalone node).
	NodeKey []byte
	// NodeVerifyKeys are further keys a node request may be signed with:
	// the other keys of a cluster key rotation (NodeKey always verifies).
	// Server.SetNodeKeys replaces both while the server runs.
	NodeVerifyKeys [][]byte
	// NodeAuthV1 is for a rolling upgrade from a version that signs and
	// verifies node requests in the v1 form only (harvestd
	// --node-auth-v1): this node then accepts a v1 signature from a node
	// that sends no v2 one, and signs its own requests in both forms (v1
	// first, which such a node reads). The v1 form covers neither the
	// body, the Idempotency-Key nor the receiving node. False: v2 only,
	// sent and accepted.
	NodeAuthV1 bool
	// ForwardTLS, when set, is the TLS configuration of requests to other
	// nodes (their URLs are https): the CA that verifies them and this
	// node's certificate.
	ForwardTLS *tls.Config
	// NodeCertRequired refuses (401) a node request that did not come
	// over TLS with a client certificate verified against the listener's
	// CA: with mutual TLS between nodes, the cluster key alone is not
	// enough (the node sets it when it has a CA, --tls-ca).
	NodeCertRequired bool
	// Limits shed load: a per-token rate and in-flight limits (shed.go).
	Limits Limits
	// Logger logs server faults (5xx) and, at info level, the audit
	// trail (audit.go: admin actions and refused authentications, with
	// audit=true); no other request is logged at info level.
	Logger zerolog.Logger
}

func (c Config) withDefaults() Config {
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, MaxBodyBytesDefault)
	c.ResultWaitMax = cmp.Or(c.ResultWaitMax, ResultWaitMaxDefault)
	c.BodyReadTimeout = cmp.Or(c.BodyReadTimeout, BodyReadTimeoutDefault)
	c.Limits = c.Limits.withDefaults()
	c.StreamHeartbeat = cmp.Or(c.StreamHeartbeat, StreamHeartbeatDefault)
	return c
}

// Validate reports invalid fields.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 || c.ResultWaitMax < 0 || c.BodyReadTimeout < 0 || c.StreamHeartbeat < 0 {
		return errors.New("api config: limits must not be negative")
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if c.ResultWaitMax > forwardTimeout/2 {
		return fmt.Errorf("api config: result wait max %s is over %s, half the forwarding timeout", c.ResultWaitMax, forwardTimeout/2)
	}
	return nil
}
