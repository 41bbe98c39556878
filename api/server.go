package api

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/metrics"
)

// BasePath prefixes every API route.
const BasePath = "/api/harvest"

// Server is the HTTP API of one node; it is an http.Handler.
type Server struct {
	cfg    Config
	router Router
	log    zerolog.Logger
	gin    *gin.Engine
	client *http.Client
	// streams forwards event streams (newStreamClient).
	streams *http.Client
	// access is what each "METHOD /path" route demands (see handle).
	access map[string]access
	// shedder holds the load shedding limits (shed.go).
	shedder *shedder
	// budget bounds the history event streams hold (stream_budget.go);
	// streamPage bounds the data of a page a stream reads.
	budget     *streamBudget
	streamPage int64
	// nodeKeys, once SetNodeKeys ran, replace the Config's node keys.
	nodeKeys atomic.Pointer[nodeKeys]
	now      func() time.Time
}

// New builds the API over router.
func New(cfg Config, router Router) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	gin.SetMode(gin.ReleaseMode)
	s := &Server{cfg: cfg, router: router, log: cfg.Logger.With().Str("component", "api").Logger(), gin: gin.New(), client: newForwardClient(cfg.ForwardTLS),
		streams: newStreamClient(cfg.ForwardTLS),
		access:  map[string]access{}, shedder: newShedder(cfg.Limits), now: time.Now,
		budget: newStreamBudget(cfg.Limits.StreamMemory), streamPage: streamPageBytes(cfg.Limits.StreamMemory)}
	s.gin.HandleMethodNotAllowed = true
	// No redirects: a path with a trailing or empty segment, or in the
	// wrong case, gets the JSON error shape (404 no_route, or 400 naming
	// an empty parameter), never a 301/307 with an empty body.
	s.gin.RedirectTrailingSlash = false
	s.gin.RedirectFixedPath = false
	s.gin.Use(s.recoverJSON, s.bodyDeadline)
	s.gin.NoRoute(func(c *gin.Context) {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNoRoute, msg: "no route " + c.Request.Method + " " + c.Request.URL.Path})
	})
	s.gin.NoMethod(func(c *gin.Context) {
		abort(c, &apiError{status: http.StatusMethodNotAllowed, code: codeMethod, msg: "method " + c.Request.Method + " not allowed here"})
	})
	s.routes()
	return s, nil
}

// routes registers every route with its access (see handle).
func (s *Server) routes() {
	top := &s.gin.RouterGroup
	s.handle(top, http.MethodGet, "/healthz", open, s.healthz)
	s.handle(top, http.MethodGet, "/readyz", open, s.readyz)
	s.handle(top, http.MethodGet, "/metrics", needRead, gin.WrapH(metrics.Handler()))

	g := s.gin.Group(BasePath)
	s.handle(g, http.MethodGet, "/openapi.json", open, s.openAPI)
	s.handle(g, http.MethodGet, "/cluster/members", needRead, s.members)
	s.handle(g, http.MethodGet, "/cluster/routing", needRead, s.routing)
	s.handle(g, http.MethodGet, "/internal/shards/:shard/probe", nodeOnly, s.internalProbe)
	s.handle(g, http.MethodPost, "/internal/shards/:shard/claim", nodeOnly, s.internalClaim)
	s.adminRoutes(g)
	s.gateRoutes(g)
	s.scheduleRoutes(g)
	s.deferredRoutes(g)
	s.tokenRoutes(g)
	s.webhookRoutes(g)
	s.httpActivityRoutes(g)
	s.flowLimitRoutes(g)
	s.activityRoutes(g)
	s.uiRoutes(top, g)
	s.handle(g, http.MethodGet, "/workflows", needRead, s.list)
	s.handle(g, http.MethodGet, "/flow", needRead, s.flow)
	s.handle(g, http.MethodPost, "/workflows/batch_start", needWrite, s.batchStart)
	// Gin needs one wildcard name per path position: :id is the workflow
	// name on start routes and the execution id everywhere else. A start
	// whose policy terminates a running run needs admin (mayTerminate).
	s.handle(g, http.MethodPost, "/workflows/:id/start", needWrite, s.start)
	s.handle(g, http.MethodPost, "/workflows/:id/signal-with-start", needWrite, s.signalWithStart)
	s.handle(g, http.MethodPost, "/workflows/:id/signal/:signal", needWrite, s.signal)
	s.handle(g, http.MethodPost, "/workflows/:id/update/:update", needWrite, s.update)
	s.handle(g, http.MethodPost, "/workflows/:id/update-with-start", needWrite, s.updateWithStart)
	s.handle(g, http.MethodPost, "/batch", needAdmin, s.createBatch)
	s.handle(g, http.MethodGet, "/batch/:id", needRead, s.describeBatch)
	s.handle(g, http.MethodPost, "/batch/:id/cancel", needAdmin, s.stopBatch)
	s.handle(g, http.MethodGet, "/workflows/:id", needRead, s.describe)
	s.handle(g, http.MethodGet, "/workflows/:id/result", needRead, s.result)
	s.handle(g, http.MethodGet, "/workflows/:id/children", needRead, s.children)
	s.handle(g, http.MethodGet, "/workflows/:id/history", needRead, s.history)
	s.handle(g, http.MethodGet, "/workflows/:id/events/stream", needRead, s.eventsStream)
	s.handle(g, http.MethodGet, "/workflows/:id/query/:query", needRead, s.query)
	s.handle(g, http.MethodPost, "/workflows/:id/query/:query", needRead, s.query)
	s.handle(g, http.MethodPost, "/workflows/:id/cancel", needWrite, s.cancel)
	s.handle(g, http.MethodPost, "/workflows/:id/terminate", needAdmin, s.terminate)
	s.handle(g, http.MethodPost, "/workflows/:id/reset", needAdmin, s.reset)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.gin.ServeHTTP(w, r) }

// Routes lists "METHOD path" of every registered route (for the OpenAPI test).
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.gin.Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// recoverJSON turns a handler panic into the JSON 500 shape.
func (s *Server) recoverJSON(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error().Str("panic", fmt.Sprint(r)).Str("route", c.FullPath()).Msg("handler panicked")
			abort(c, &apiError{status: http.StatusInternalServerError, code: codeInternal, msg: "internal error"})
		}
	}()
	c.Next()
}

// executionTarget parses the :id path parameter and routes it by the
// shard its first two bytes name.
func (s *Server) executionTarget(c *gin.Context) (uuid.UUID, Target, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, Target{}, badRequest(codeInvalidArgument, fmt.Sprintf("execution id %q is not a UUID", c.Param("id")))
	}
	t, err := s.router.ForShard(engine.ShardOf(id))
	if err != nil {
		return uuid.Nil, Target{}, err
	}
	return id, t, nil
}

// executionShard routes :id; a nil Shard means the request was forwarded
// (or refused) and answered. body is what a forward sends.
func (s *Server) executionShard(c *gin.Context, body []byte) (uuid.UUID, Shard) {
	id, t, err := s.executionTarget(c)
	if err != nil {
		s.fail(c, err)
		return id, nil
	}
	return id, s.serveOrForward(c, t, body)
}

func (s *Server) healthz(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }

func (s *Server) readyz(c *gin.Context) {
	if err := s.router.Ready(); err != nil {
		abort(c, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: err.Error()})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

var _ Shard = (*engine.Engine)(nil)
