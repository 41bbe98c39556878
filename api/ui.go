package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/ui"
)

// UIPath is where every node serves the web UI (package ui).
const UIPath = "/ui/"

// uiRoutes registers the web UI's static assets (open: they hold no
// data; every data call the page makes is a bearer route) and /whoami,
// which tells the page the caller's scope.
func (s *Server) uiRoutes(top, g *gin.RouterGroup) {
	assets := gin.WrapH(ui.Handler(UIPath))
	s.handle(top, http.MethodGet, "/ui", open, func(c *gin.Context) { c.Redirect(http.StatusFound, UIPath) })
	s.handle(top, http.MethodGet, "/ui/*asset", open, assets)
	s.handle(g, http.MethodGet, "/whoami", needRead, s.whoami)
}

// whoami handles GET /whoami: the caller's scope and token id, and whether
// this node checks tokens at all.
func (s *Server) whoami(c *gin.Context) {
	id := identity(c)
	c.JSON(http.StatusOK, gin.H{"scope": id.Scope.String(), "token_id": id.TokenID, "auth": s.cfg.Verifier != nil,
		"node_id": s.cfg.NodeID})
}
