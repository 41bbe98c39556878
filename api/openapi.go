package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDoc is the OpenAPI 3 document of this API; a test checks that
// it names exactly the registered routes.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openAPIDoc)
}
