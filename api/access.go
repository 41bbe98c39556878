package api

import (
	"errors"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/auth"
)

// class is how a route authenticates its callers. Every route has exactly
// one, given where it is registered (handle); a route registered any
// other way fails TestRouteAccess.
type class uint8

const (
	// classOpen: anyone (health, readiness, the OpenAPI document).
	classOpen class = iota + 1
	// classBearer: a client's bearer token of at least the route's scope,
	// or a node forwarding a request it authenticated.
	classBearer
	// classNode: another node of the cluster (the cluster credential);
	// user tokens are refused.
	classNode
	// classCapability: a credential of the route's own (provider-signed
	// webhooks, activity task tokens), which its handler checks; bearer
	// tokens are neither needed nor looked at.
	classCapability
)

var classNames = map[class]string{classOpen: "open", classBearer: "bearer", classNode: "node", classCapability: "capability"}

func (c class) String() string { return classNames[c] }

// access is what a route demands: its class and, for bearer routes, the
// least scope.
type access struct {
	class class
	scope auth.Scope
}

// The accesses routes declare.
var (
	open      = access{class: classOpen}
	nodeOnly  = access{class: classNode}
	needRead  = access{class: classBearer, scope: auth.ScopeRead}
	needWrite = access{class: classBearer, scope: auth.ScopeWrite}
	needAdmin = access{class: classBearer, scope: auth.ScopeAdmin}
	// capability: the handler verifies the request's own credential.
	capability = access{class: classCapability}
)

// Gin context keys of the caller: its auth.Identity, and whether another
// node sent the request.
const (
	identityKey = "harvest.identity"
	fromNodeKey = "harvest.from_node"
	// refusedIdentityKey: a verified identity refused for its scope (the
	// audit trail names it).
	refusedIdentityKey = "harvest.refused_identity"
)

// handle registers a route with its access: the guard runs before h.
func (s *Server) handle(g *gin.RouterGroup, method, relative string, a access, h gin.HandlerFunc) {
	route := method + " " + path.Join(g.BasePath(), relative)
	s.access[route] = a
	chain := []gin.HandlerFunc{s.guard(route, a)}
	if isAdminRoute(a) {
		chain = append(chain, s.auditor(auditAction(route)))
	}
	if a.class == classBearer {
		chain = append(chain, s.shed(strings.HasSuffix(route, streamRouteSuffix)))
	}
	g.Handle(method, relative, append(chain, h)...)
}

// guard authenticates and authorizes the request for a before any work,
// keyed replays included; a refusal is audited.
func (s *Server) guard(route string, a access) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := s.authorize(c, a)
		if err != nil {
			s.auditRefusal(c, route, err)
			abort(c, err)
			return
		}
		c.Set(identityKey, id)
	}
}

func (s *Server) authorize(c *gin.Context, a access) (auth.Identity, *apiError) {
	if isSystemCall(c.Request) {
		// The node's own outbox (outbound.go): trusted like another node.
		c.Set(fromNodeKey, true)
		return systemIdentity, nil
	}
	fromNode, err := s.nodeCaller(c.Request)
	if err != nil {
		return auth.Identity{}, err
	}
	c.Set(fromNodeKey, fromNode != nil)
	switch a.class {
	case classOpen:
		return auth.Identity{}, nil
	case classNode:
		if fromNode == nil {
			return auth.Identity{}, unauthenticated("this route serves other nodes of the cluster only (the cluster credential)")
		}
		return *fromNode, nil
	case classBearer:
		return s.authorizeBearer(c, fromNode, a.scope)
	case classCapability:
		return auth.Identity{}, nil
	}
	return auth.Identity{}, unauthenticated("this route takes a credential of its own")
}

// authorizeBearer checks the caller's identity (a forwarding node's word,
// or the bearer token) against scope.
func (s *Server) authorizeBearer(c *gin.Context, fromNode *auth.Identity, scope auth.Scope) (auth.Identity, *apiError) {
	id := auth.Anonymous
	switch {
	case fromNode != nil:
		id = *fromNode
	case s.cfg.Verifier != nil:
		var err error
		if id, err = s.cfg.Verifier.Verify(c.GetHeader("Authorization")); err != nil {
			return auth.Identity{}, tokenRefused(err)
		}
	}
	if !id.Scope.Allows(scope) {
		c.Set(refusedIdentityKey, id)
		return auth.Identity{}, &apiError{status: http.StatusForbidden, code: codeForbidden,
			msg: "this route needs a token of scope " + scope.String() + "; yours is " + id.Scope.String()}
	}
	return id, nil
}

// identity is the caller's verified identity (set by guard).
func identity(c *gin.Context) auth.Identity {
	if id, ok := c.Get(identityKey); ok {
		return id.(auth.Identity)
	}
	return auth.Identity{}
}

// fromNode reports whether another node of the cluster sent the request
// (its signature verified).
func fromNode(c *gin.Context) bool { return c.GetBool(fromNodeKey) }

// mayTerminate reports whether the caller may run a policy that
// terminates a running run.
func mayTerminate(c *gin.Context) bool { return identity(c).Scope.Allows(auth.ScopeAdmin) }

func unauthenticated(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: codeUnauthenticated, msg: msg}
}

// tokenRefused answers a failed verification: 401, or 503 when this
// node's token table may be stale.
func tokenRefused(err error) *apiError {
	if errors.Is(err, auth.ErrStale) {
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: err.Error() + "; retry, or use another node"}
	}
	return unauthenticated(err.Error())
}
