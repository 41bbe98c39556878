package api

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/harvestd/harvest/auth"
)

// Headers of node-to-node requests. A client's request that carries any
// X-Harvest-* header is refused (400); a node's must carry a valid
// NodeAuthHeader, or it is refused (401).
const (
	// IdentityHeader carries the identity the forwarding node verified:
	// "<scope> <token id>" ("-" for no token: authentication off).
	IdentityHeader = "X-Harvest-Identity"
	// NodeAuthHeader proves the request comes from a node holding the
	// cluster key: "v1 <unix ms> <signature>", the signature an
	// HMAC-SHA256 over the method, the request URI, the time and the
	// other X-Harvest-* headers.
	NodeAuthHeader = "X-Harvest-Node-Auth"
)

// harvestHeaderPrefix starts every node-to-node header (canonical form).
const harvestHeaderPrefix = "X-Harvest-"

// nodeAuthSkew is how far a node request's time may be from this node's
// clock: the bound within which a captured signature can be replayed.
const nodeAuthSkew = 5 * time.Minute

// signedHeaders are the X-Harvest-* headers the signature covers.
var signedHeaders = []string{ForwardedHeader, ShardHeader, EpochHeader, IdentityHeader}

// signNode makes req a node request of this node acting for id.
func (s *Server) signNode(req *http.Request, id auth.Identity) {
	SignNode(req, s.keys().sign, s.cfg.NodeID, id, s.now())
}

// SignNode makes req a request of node nodeID acting for id, signed at
// now with key (the cluster key's clusterkey.LabelHTTP key). Set every
// other X-Harvest-* header first: the signature covers them. With no key
// the request goes unsigned, and a receiver refuses it.
func SignNode(req *http.Request, key []byte, nodeID string, id auth.Identity, now time.Time) {
	req.Header.Set(ForwardedHeader, nodeID)
	req.Header.Set(IdentityHeader, formatIdentity(id))
	if len(key) == 0 {
		return
	}
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	req.Header.Set(NodeAuthHeader, "v1 "+ms+" "+nodeMAC(key, req.Method, req.URL.RequestURI(), ms, req.Header))
}

// nodeCaller authenticates a node request: the identity it acts for, nil
// for a client's request. A client's request with X-Harvest-* headers,
// and a node request whose signature does not verify, are errors.
func (s *Server) nodeCaller(r *http.Request) (*auth.Identity, *apiError) {
	proof := r.Header.Get(NodeAuthHeader)
	if proof == "" {
		return nil, refuseHarvestHeaders(r.Header)
	}
	if err := s.verifyNode(r, proof); err != nil {
		return nil, unauthenticated("node request refused: " + err.Error())
	}
	id, ok := parseIdentity(r.Header.Get(IdentityHeader))
	if !ok {
		return nil, badRequest(codeInvalidArgument, "malformed "+IdentityHeader+" header")
	}
	return &id, nil
}

func (s *Server) verifyNode(r *http.Request, proof string) error {
	if s.cfg.NodeCertRequired && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		return fmt.Errorf("no client certificate of the cluster's CA (nodes use mutual TLS)")
	}
	keys := s.keys()
	if len(keys.verify) == 0 {
		return fmt.Errorf("this node has no cluster key")
	}
	f := strings.Fields(proof)
	if len(f) != 3 || f[0] != "v1" {
		return fmt.Errorf("malformed %s", NodeAuthHeader)
	}
	ms, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("malformed %s", NodeAuthHeader)
	}
	if skew := s.now().Sub(time.UnixMilli(ms)); skew > nodeAuthSkew || skew < -nodeAuthSkew {
		return fmt.Errorf("signed %s away from this node's clock (at most %s)", skew.Round(time.Second), nodeAuthSkew)
	}
	if !keys.matches(f[2], func(key []byte) string { return nodeMAC(key, r.Method, r.RequestURI, f[1], r.Header) }) {
		return fmt.Errorf("bad signature (is the cluster key the same on every node?)")
	}
	return nil
}

// nodeMAC signs one request: method, URI, time and signedHeaders, each
// ended by a newline.
func nodeMAC(key []byte, method, uri, ms string, h http.Header) string {
	buf := make([]byte, 0, 256)
	for _, v := range [...]string{method, uri, ms} {
		buf = append(append(buf, v...), '\n')
	}
	for _, name := range signedHeaders {
		buf = append(append(buf, h.Get(name)...), '\n')
	}
	m := hmac.New(sha256.New, key)
	m.Write(buf)
	return base64.RawURLEncoding.EncodeToString(m.Sum(buf[:0]))
}

// refuseHarvestHeaders refuses a client's request that sets headers only
// nodes may set.
func refuseHarvestHeaders(h http.Header) *apiError {
	for name := range h { // the server canonicalizes header names
		if strings.HasPrefix(name, harvestHeaderPrefix) {
			return badRequest(codeForgedHeader, "header "+name+" is for requests between nodes of the cluster; a client must not send it")
		}
	}
	return nil
}

func formatIdentity(id auth.Identity) string {
	return id.Scope.String() + " " + cmp.Or(id.TokenID, "-")
}

func parseIdentity(v string) (auth.Identity, bool) {
	scope, tokenID, ok := strings.Cut(v, " ")
	s, err := auth.ParseScope(scope)
	if !ok || err != nil || tokenID == "" {
		return auth.Identity{}, false
	}
	if tokenID == "-" {
		tokenID = ""
	}
	return auth.Identity{TokenID: tokenID, Scope: s}, true
}
