package api

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/auth"
)

// The audit trail: every admin action (token changes included) and every
// refused authentication logs one info line with audit=true, token_id,
// token_name, action, target, result, status and remote_addr (and, on a
// node, the node_id of the node's logger: the node that logs it). A line
// never holds a secret: no token, key or Authorization header, and a
// path value that looks like a token is logged as auditRedacted.
//
// An admin action is logged by the node the client sent it to (the one
// that knows the client's address and token name), after its answer,
// forwarded or not; the node a request was forwarded to does not log it
// again.

// auditActions names the action of every admin route (the routes of
// scope admin); TestAuditTrail checks that none is missing.
var auditActions = map[string]string{
	"POST " + BasePath + "/workflows/:id/terminate":      "workflow.terminate",
	"POST " + BasePath + "/workflows/:id/reset":          "workflow.reset",
	"GET " + BasePath + "/admin/shards":                  "shard.list",
	"POST " + BasePath + "/admin/shards":                 "shard.add",
	"GET " + BasePath + "/admin/shards/:shard":           "shard.get",
	"POST " + BasePath + "/admin/shards/:shard/drain":    "shard.drain",
	"POST " + BasePath + "/admin/shards/:shard/undrain":  "shard.undrain",
	"GET " + BasePath + "/admin/raft/peers":              "raft.peers",
	"DELETE " + BasePath + "/admin/raft/peers/:peer":     "raft.remove_peer",
	"GET " + BasePath + "/admin/gates":                   "gate.list",
	"GET " + BasePath + "/admin/deferred":                "deferred.list",
	"POST " + BasePath + "/admin/gates":                  "gate.close",
	"DELETE " + BasePath + "/admin/gates/:gate":          "gate.open",
	"GET " + BasePath + "/admin/tokens":                  "token.list",
	"POST " + BasePath + "/admin/tokens":                 "token.create",
	"DELETE " + BasePath + "/admin/tokens/:token":        "token.revoke",
	"GET " + BasePath + "/admin/webhooks":                "webhook.list",
	"POST " + BasePath + "/admin/webhooks":               "webhook.create",
	"DELETE " + BasePath + "/admin/webhooks/:webhook":    "webhook.delete",
	"GET " + BasePath + "/admin/activities":              "activity.list",
	"POST " + BasePath + "/admin/activities":             "activity.register",
	"DELETE " + BasePath + "/admin/activities/:activity": "activity.delete",
	"GET " + BasePath + "/admin/limits":                  "limit.list",
	"PUT " + BasePath + "/admin/limits/:kind/:name":      "limit.set",
	"DELETE " + BasePath + "/admin/limits/:kind/:name":   "limit.delete",
	"POST " + BasePath + "/batch":                        "batch.create",
	"POST " + BasePath + "/batch/:id/cancel":             "batch.cancel",
	"POST " + BasePath + "/schedules":                    "schedule.create",
	"DELETE " + BasePath + "/schedules/:schedule":        "schedule.delete",
	"POST " + BasePath + "/schedules/:schedule/pause":    "schedule.pause",
	"POST " + BasePath + "/schedules/:schedule/resume":   "schedule.resume",
}

// Audit results.
const (
	auditOK      = "ok"      // answered below 400
	auditRefused = "refused" // answered 4xx
	auditFailed  = "failed"  // answered 5xx
)

// auditRedacted replaces a logged value that looks like a token.
const auditRedacted = "[redacted]"

// authenticateAction is the action of a refused authentication.
const authenticateAction = "authenticate"

// auditTargetKey is the gin context key of an action's target when its
// path does not name it (setAuditTarget).
const auditTargetKey = "harvest.audit_target"

// isAdminRoute reports whether a route's actions are audited.
func isAdminRoute(a access) bool { return a.class == classBearer && a.scope == auth.ScopeAdmin }

// auditAction is the action name of route ("METHOD /path").
func auditAction(route string) string {
	if name, ok := auditActions[route]; ok {
		return name
	}
	return route
}

// setAuditTarget names what an admin action acted on when its path does
// not: a created token, shard or gate.
func setAuditTarget(c *gin.Context, target string) { c.Set(auditTargetKey, target) }

// auditor runs the route's handler, then logs the admin action's outcome.
func (s *Server) auditor(action string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if fromNode(c) {
			return // the node the client sent it to logs it
		}
		id := identity(c)
		s.auditEvent(c, id.TokenID, id.Name, action, auditTarget(c), c.Writer.Status()).Msg("admin action")
	}
}

// auditRefusal logs a refused authentication or authorization. The
// line's node_id is the refusing node's, from the logger (the node's
// root logger carries it); the node a refused request claims to come
// from is from_node_id, present only when the request names one.
func (s *Server) auditRefusal(c *gin.Context, route string, e *apiError) {
	tokenID, name := claimedToken(c)
	ev := s.auditEvent(c, tokenID, name, authenticateAction, route, e.status).Str("code", e.code)
	if from := c.GetHeader(ForwardedHeader); from != "" {
		ev = ev.Str("from_node_id", redact(from))
	}
	ev.Msg("request refused")
}

// auditEvent is an audit line's common fields.
func (s *Server) auditEvent(c *gin.Context, tokenID, name, action, target string, status int) *zerolog.Event {
	return s.log.Info().Bool("audit", true).Str("token_id", redact(tokenID)).Str("token_name", redact(name)).
		Str("action", action).Str("target", target).Str("result", auditResult(status)).Int("status", status).
		Str("remote_addr", c.Request.RemoteAddr)
}

// claimedToken is the token a refused caller presented: its id when the
// header parses (never its secret), and the name of a token that
// verified but lacked the scope.
func claimedToken(c *gin.Context) (id, name string) {
	if v, ok := c.Get(refusedIdentityKey); ok {
		i := v.(auth.Identity)
		return i.TokenID, i.Name
	}
	full, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok {
		return "", ""
	}
	id, err := auth.Parse(strings.TrimSpace(full))
	if err != nil {
		return "", ""
	}
	return id, ""
}

// auditTarget is what the action acted on: the handler's word, else the
// route's path parameters ("shard=3").
func auditTarget(c *gin.Context) string {
	if v := c.GetString(auditTargetKey); v != "" {
		return redact(v)
	}
	parts := make([]string, 0, len(c.Params))
	for _, p := range c.Params {
		parts = append(parts, p.Key+"="+redact(p.Value))
	}
	return strings.Join(parts, ",")
}

func auditResult(status int) string {
	switch {
	case status >= 500:
		return auditFailed
	case status >= 400:
		return auditRefused
	}
	return auditOK
}

// redact hides a value that holds a token.
func redact(v string) string {
	if strings.Contains(strings.ToLower(v), auth.Prefix) {
		return auditRedacted
	}
	return v
}

// tokenTarget is the audit target of a token change.
func tokenTarget(id, name string) string {
	if id == "" {
		return "name=" + strconv.Quote(name)
	}
	return "token=" + id
}
