package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// ShardView is one shard of the catalog as the admin routes show it.
type ShardView struct {
	ShardID    uint16    `json:"shard_id"`
	State      string    `json:"state"` // readable, writable, draining, read_only
	Database   string    `json:"database"`
	AddedAt    time.Time `json:"added_at"`
	StateSince time.Time `json:"state_since"`
	Owner      string    `json:"owner,omitempty"`
	Reachable  bool      `json:"reachable"`
	// Status is what the shard still holds inside the idempotency window
	// (nil when unreachable).
	Status *engine.DrainStatus `json:"status,omitempty"`
	// Error explains why the shard is unreachable.
	Error string `json:"error,omitempty"`
}

// EpochView is one placement epoch.
type EpochView struct {
	Number   uint64    `json:"number"`
	Since    time.Time `json:"since"`
	Readable []uint16  `json:"readable"`
	Writable []uint16  `json:"writable"`
}

// CatalogView is the whole catalog.
type CatalogView struct {
	Shards            []ShardView `json:"shards"`
	Epochs            []EpochView `json:"epochs"`
	IdempotencyWindow string      `json:"idempotency_window"`
	Leader            string      `json:"leader,omitempty"`
}

// DrainView is the answer to a drain.
type DrainView struct {
	Shard ShardView `json:"shard"`
	// Forced is true when --force overrode a safety check; Risk says what.
	Forced bool   `json:"forced"`
	Risk   string `json:"risk,omitempty"`
}

// PeerView is one raft server.
type PeerView struct {
	ID     string `json:"id"`
	Addr   string `json:"addr"`
	Voter  bool   `json:"voter"`
	Leader bool   `json:"leader"`
}

// Admin is the catalog administration a node offers. Writes on a node that
// is not the raft leader return *LeaderError; the API forwards them.
type Admin interface {
	Catalog(ctx context.Context) (CatalogView, error)
	Shard(ctx context.Context, id uint16) (ShardView, error)
	AddShard(ctx context.Context, id uint16, dsn string) (ShardView, error)
	Drain(ctx context.Context, id uint16, force bool) (DrainView, error)
	Undrain(ctx context.Context, id uint16) (ShardView, error)
	Peers(ctx context.Context) ([]PeerView, error)
	RemovePeer(ctx context.Context, id string) error
	// CatalogIndex is the raft index of the last command this node
	// applied, and whether it leads (see GET /internal/catalog/index).
	CatalogIndex(ctx context.Context) (index uint64, leader bool, err error)
}

// Errors of the admin routes.
var (
	// ErrUnsafeDrain refuses a drain that could lose dedup or stop all
	// placement (the last writable shard, an unreachable shard) without force.
	ErrUnsafeDrain = errors.New("unsafe drain")
	// ErrNoAdmin: this node runs without a raft catalog.
	ErrNoAdmin = errors.New("this node has no shard catalog to administer (static shards)")
	// ErrUnknownShard: no such shard in the catalog.
	ErrUnknownShard = errors.New("unknown shard")
	// ErrUnknownPeer: no such raft server.
	ErrUnknownPeer = errors.New("unknown raft peer")
	// ErrInvalidTransition: the shard cannot go to that state from its own.
	ErrInvalidTransition = errors.New("invalid shard state transition")
	// ErrShardUnreachable: the shard database to add cannot be used.
	ErrShardUnreachable = errors.New("shard database unreachable")
	// ErrPeerIsLeader: the peer to remove is the raft leader.
	ErrPeerIsLeader = errors.New("the peer to remove is the raft leader")
	// ErrOutcomeUnknown: a catalog change may or may not have been
	// applied (the leader changed or the deadline passed while it was in
	// flight).
	ErrOutcomeUnknown = errors.New("outcome unknown")
)

// LeaderError sends a catalog write to the raft leader's API.
type LeaderError struct {
	LeaderID string
	URL      string // "" when no leader is known
}

func (e *LeaderError) Error() string {
	if e.URL == "" {
		return "no raft leader known"
	}
	return fmt.Sprintf("not the raft leader; leader is %s", e.LeaderID)
}

func (s *Server) adminRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/admin/shards", needAdmin, s.adminCatalog)
	s.handle(g, http.MethodPost, "/admin/shards", needAdmin, s.adminAddShard)
	s.handle(g, http.MethodGet, "/admin/shards/:shard", needAdmin, s.adminShard)
	s.handle(g, http.MethodPost, "/admin/shards/:shard/drain", needAdmin, s.adminDrain)
	s.handle(g, http.MethodPost, "/admin/shards/:shard/undrain", needAdmin, s.adminUndrain)
	s.handle(g, http.MethodGet, "/admin/raft/peers", needAdmin, s.adminPeers)
	s.handle(g, http.MethodDelete, "/admin/raft/peers/:peer", needAdmin, s.adminRemovePeer)
	s.handle(g, http.MethodGet, "/internal/catalog/index", nodeOnly, s.catalogIndex)
	s.handle(g, http.MethodPost, "/internal/catalog/schedules", nodeOnly, s.applyScheduleOp)
}

// adminCall runs fn against the node's Admin; a *LeaderError forwards the
// request (with body) to the leader, once.
func (s *Server) adminCall(c *gin.Context, body []byte, fn func(a Admin) (int, any, error)) {
	if s.cfg.Admin == nil {
		s.fail(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: ErrNoAdmin.Error()})
		return
	}
	s.leaderCall(c, body, func() (int, any, error) { return fn(s.cfg.Admin) })
}

// leaderCall answers fn's result; a *LeaderError forwards the request
// (with body) to the raft leader, once.
func (s *Server) leaderCall(c *gin.Context, body []byte, fn func() (int, any, error)) {
	status, out, err := fn()
	var leader *LeaderError
	if errors.As(err, &leader) {
		if leader.URL == "" || c.GetHeader(ForwardedHeader) != "" {
			abort(c, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
				msg: "no raft leader reachable from this node right now; retry", extra: gin.H{"leader": leader.LeaderID}})
			return
		}
		s.forward(c, Target{Owner: leader.LeaderID, URL: leader.URL}, body)
		return
	}
	if err != nil {
		s.fail(c, s.adminError(err))
		return
	}
	c.JSON(status, out)
}

func (s *Server) adminError(err error) error {
	switch {
	case errors.Is(err, ErrUnsafeDrain):
		return &apiError{status: http.StatusConflict, code: "unsafe_drain", msg: err.Error()}
	case errors.Is(err, ErrUnknownShard), errors.Is(err, ErrUnknownPeer), errors.Is(err, ErrUnknownToken):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: err.Error()}
	case errors.Is(err, ErrInvalidTransition):
		return &apiError{status: http.StatusConflict, code: codeConflict, msg: err.Error()}
	case errors.Is(err, ErrShardUnreachable):
		return &apiError{status: http.StatusUnprocessableEntity, code: "shard_unreachable",
			msg: err.Error() + " or refused the connection (the server log has the details)"}
	case errors.Is(err, ErrPeerIsLeader):
		return &apiError{status: http.StatusConflict, code: codeConflict,
			msg: err.Error() + ": stop that node instead, then remove it through the new leader"}
	case errors.Is(err, ErrOutcomeUnknown):
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: err.Error() + ": read the catalog or the peers, then retry"}
	}
	return err
}

func shardParam(c *gin.Context) (uint16, error) {
	n, err := strconv.ParseUint(c.Param("shard"), 10, 16)
	if err != nil || n == 0xFFFF {
		return 0, badRequest(codeInvalidArgument, fmt.Sprintf("shard %q must be an integer from 0 to 65534", c.Param("shard")))
	}
	return uint16(n), nil
}

func (s *Server) adminCatalog(c *gin.Context) {
	s.adminCall(c, nil, func(a Admin) (int, any, error) {
		v, err := a.Catalog(c.Request.Context())
		return http.StatusOK, v, err
	})
}

func (s *Server) adminShard(c *gin.Context) {
	id, err := shardParam(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.adminCall(c, nil, func(a Admin) (int, any, error) {
		v, err := a.Shard(c.Request.Context(), id)
		return http.StatusOK, v, err
	})
}

type addShardBody struct {
	ShardID *int   `json:"shard_id"`
	DSN     string `json:"dsn"`
}

func (s *Server) adminAddShard(c *gin.Context) {
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var b addShardBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	if b.ShardID == nil || *b.ShardID < 0 || *b.ShardID >= 0xFFFF {
		s.fail(c, badRequest(codeInvalidArgument, "shard_id must be an integer from 0 to 65534"))
		return
	}
	if err := checkText("dsn", b.DSN, maxIDLen, true); err != nil {
		s.fail(c, err)
		return
	}
	setAuditTarget(c, "shard="+strconv.Itoa(*b.ShardID))
	s.adminCall(c, raw, func(a Admin) (int, any, error) {
		v, err := a.AddShard(c.Request.Context(), uint16(*b.ShardID), b.DSN)
		return http.StatusCreated, v, err
	})
}

type drainBody struct {
	Force bool `json:"force"`
}

func (s *Server) adminDrain(c *gin.Context) {
	id, err := shardParam(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var b drainBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	s.adminCall(c, raw, func(a Admin) (int, any, error) {
		v, err := a.Drain(c.Request.Context(), id, b.Force)
		return http.StatusAccepted, v, err
	})
}

func (s *Server) adminUndrain(c *gin.Context) {
	id, err := shardParam(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.adminCall(c, nil, func(a Admin) (int, any, error) {
		v, err := a.Undrain(c.Request.Context(), id)
		return http.StatusOK, v, err
	})
}

func (s *Server) adminPeers(c *gin.Context) {
	s.adminCall(c, nil, func(a Admin) (int, any, error) {
		v, err := a.Peers(c.Request.Context())
		return http.StatusOK, gin.H{"peers": v}, err
	})
}

func (s *Server) adminRemovePeer(c *gin.Context) {
	id := c.Param("peer")
	if err := checkText("peer id", id, maxNameLen, true); err != nil {
		s.fail(c, err)
		return
	}
	s.adminCall(c, nil, func(a Admin) (int, any, error) {
		return http.StatusOK, gin.H{"ok": true, "removed": id}, a.RemovePeer(c.Request.Context(), id)
	})
}

// catalogIndex handles GET /internal/catalog/index (node to node): a
// follower learns how far the leader's catalog has come, to know whether
// its own is current (its token table, say). Never forwarded.
func (s *Server) catalogIndex(c *gin.Context) {
	if s.cfg.Admin == nil {
		s.fail(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: ErrNoAdmin.Error()})
		return
	}
	index, leader, err := s.cfg.Admin.CatalogIndex(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"index": index, "leader": leader})
}
