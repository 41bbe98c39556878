package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// The event stream, GET /workflows/{id}/events/stream: server-sent events,
// one "history" event per history event (its SSE id is the event_id), a
// last "closed" event once the run is terminal and every event was sent.
const (
	// streamPoll is how long the stream waits for the run to close
	// before it reads new events again.
	streamPoll = 250 * time.Millisecond
	// streamResumeWithin bounds how long a stream looks for its run's
	// shard again after losing it (an ownership change) before it ends
	// with an "error" event; the client may resume with Last-Event-ID.
	streamResumeWithin = 30 * time.Second
	// lastEventIDHeader is where a client resumes from.
	lastEventIDHeader = "Last-Event-ID"
)

// streamRouteSuffix ends the event stream's route: it is long-lived
// (shed.go).
const streamRouteSuffix = "/events/stream"

// SSE event names of the stream.
const (
	sseHistory = "history"
	sseClosed  = "closed"
	sseError   = "error"
)

// eventsStream handles GET /workflows/{execution_id}/events/stream.
func (s *Server) eventsStream(c *gin.Context) {
	after, err := lastEventID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, t, err := s.executionTarget(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	src, err := s.openSource(c, id, t, after)
	if err != nil {
		s.fail(c, err)
		return
	}
	w := newSSEWriter(c, after, s.cfg.StreamHeartbeat)
	s.pump(c.Request.Context(), w, id, src)
}

// lastEventID reads where the client resumes: the Last-Event-ID header,
// -1 (from the start) when absent.
func lastEventID(c *gin.Context) (int64, error) {
	v := c.GetHeader(lastEventIDHeader)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest(codeInvalidArgument, fmt.Sprintf("Last-Event-ID %q must be an event_id (integer >= 0)", v))
	}
	return n, nil
}

// source is where a stream's events come from: a local shard or the
// owner's stream (forwarded event by event).
type source interface {
	// run writes the run's events after w.last until the run closes
	// (closed true) or the source is lost (err).
	run(ctx context.Context, w *sseWriter) (closed bool, err error)
}

// openSource checks the run exists (or the owner answers its stream)
// before the answer is committed to a stream: a failure is still a JSON
// error then.
func (s *Server) openSource(c *gin.Context, id uuid.UUID, t Target, after int64) (source, error) {
	ctx := c.Request.Context()
	if t.Shard != nil {
		if _, err := t.Shard.Result(ctx, id, 0); err != nil {
			return nil, err
		}
		return localSource{s: s, shard: t.Shard, id: id}, nil
	}
	if c.GetHeader(ForwardedHeader) != "" || t.URL == "" {
		return nil, notServedHere(t)
	}
	return s.dialOwner(c, t, after)
}

// pump runs sources until the run closes, the client goes away, or the
// run's shard cannot be found again within streamResumeWithin. A
// forwarded stream is never resumed here: its forwarding node resumes it.
func (s *Server) pump(ctx context.Context, w *sseWriter, id uuid.UUID, src source) {
	lostAt := time.Time{}
	for {
		closed, err := src.run(ctx, w)
		if closed || ctx.Err() != nil || w.err != nil {
			return
		}
		if lostAt.IsZero() || w.progressed() {
			lostAt = time.Now()
		}
		if w.forwarded || time.Since(lostAt) > streamResumeWithin {
			w.event(sseError, "", errorData(err))
			return
		}
		if src = s.resume(ctx, w, id); src == nil {
			return
		}
	}
}

// resume routes the run's shard again after a pause and opens its source
// from the last event sent; nil when the client went away.
func (s *Server) resume(ctx context.Context, w *sseWriter, id uuid.UUID) source {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(streamPoll):
		}
		t, err := s.router.ForShard(engine.ShardOf(id))
		if err != nil {
			continue
		}
		if t.Shard != nil {
			return localSource{s: s, shard: t.Shard, id: id}
		}
		if t.URL != "" {
			if src, err := s.dialOwner(w.c, t, w.last); err == nil {
				return src
			}
		}
	}
}

func notServedHere(t Target) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
		msg:   fmt.Sprintf("shard %d is not served here; owner %q", t.ShardID, t.Owner),
		extra: gin.H{"owner": t.Owner, "shard_id": t.ShardID}}
}

func errorData(err error) []byte {
	msg := "the run's shard is unavailable"
	if err != nil {
		msg += ": " + err.Error()
	}
	raw, _ := json.Marshal(gin.H{"error": msg, "code": codeUnavailable})
	return raw
}
