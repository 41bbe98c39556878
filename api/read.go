package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// describe handles GET /workflows/{execution_id}.
func (s *Server) describe(c *gin.Context) {
	id, shard := s.executionShard(c, nil)
	if shard == nil {
		return
	}
	d, err := shard.Describe(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{
		"execution": d.Execution, "pending_activities": nonNil(d.PendingActivities), "pending_timers": nonNil(d.PendingTimers),
		"history": nonNil(d.History), "history_truncated": d.HistoryTruncated, "children": nonNil(d.Children),
		"history_endpoint": BasePath + "/workflows/" + id.String() + "/history",
	})
}

// children handles GET /workflows/{execution_id}/children.
func (s *Server) children(c *gin.Context) {
	id, shard := s.executionShard(c, nil)
	if shard == nil {
		return
	}
	children, err := shard.Children(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"execution_id": id.String(), "children": nonNil(children)})
}

// result handles GET /workflows/{execution_id}/result?wait=.
func (s *Server) result(c *gin.Context) {
	id, shard := s.executionShard(c, nil)
	if shard == nil {
		return
	}
	wait, err := parseWait(c.Query("wait"), s.cfg.ResultWaitMax)
	if err != nil {
		s.fail(c, err)
		return
	}
	x, err := shard.Result(c.Request.Context(), id, wait)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !engine.IsTerminal(x.State) {
		c.Header("Retry-After", "1")
		c.Status(http.StatusNoContent)
		return
	}
	c.JSON(http.StatusOK, resultBody(x))
}

// resultAnswer is a closed run's result, as GET /workflows/{id}/result
// and a start that waited answer it. Its fields are in the order of their
// names, as a map would encode them.
type resultAnswer struct {
	CompletedAt *time.Time      `json:"completed_at"`
	Error       json.RawMessage `json:"error"`
	ExecutionID string          `json:"execution_id"`
	Output      json.RawMessage `json:"output"`
	State       string          `json:"state"`
}

// resultBody is the answer of outcome x: its execution_id is the run that
// closed, the last of its continue-as-new chain.
func resultBody(x engine.Outcome) *resultAnswer {
	return &resultAnswer{CompletedAt: x.CompletedAt, Error: x.Error, ExecutionID: x.ExecutionID.String(), Output: x.Output,
		State: x.State}
}

// parseWait reads a Go duration ("10s") or plain seconds ("10"), capped.
func parseWait(v string, max time.Duration) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, serr := strconv.ParseFloat(v, 64)
		if serr != nil {
			return 0, badRequest(codeInvalidArgument, fmt.Sprintf("wait %q is neither a duration nor seconds", v))
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, badRequest(codeInvalidArgument, "wait must not be negative")
	}
	return min(d, max), nil
}

// history handles GET /workflows/{execution_id}/history.
func (s *Server) history(c *gin.Context) {
	id, shard := s.executionShard(c, nil)
	if shard == nil {
		return
	}
	q, err := historyQuery(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	page, err := shard.History(c.Request.Context(), id, q)
	if err != nil {
		s.fail(c, err)
		return
	}
	page.Events = nonNil(page.Events)
	c.JSON(http.StatusOK, page)
}

// maxEventTypes bounds ?event_type= filters of one history request.
const maxEventTypes = 64

// historyQuery reads ?after=, ?limit= and ?event_type= of a history page.
func historyQuery(c *gin.Context) (engine.HistoryQuery, error) {
	var err error
	q := engine.HistoryQuery{After: -1, Types: c.QueryArray("event_type")}
	if len(q.Types) > maxEventTypes {
		return q, badRequest(codeInvalidArgument, fmt.Sprintf("event_type is given more than %d times", maxEventTypes))
	}
	for _, t := range q.Types {
		if err := checkText("event_type", t, maxNameLen, true); err != nil {
			return q, err
		}
	}
	if v := c.Query("after"); v != "" {
		if q.After, err = strconv.ParseInt(v, 10, 64); err != nil || q.After < 0 {
			return q, badRequest(codeInvalidArgument, fmt.Sprintf("after %q must be an event_id (integer >= 0)", v))
		}
	}
	q.Limit, err = intParam(c, "limit", engine.HistoryPageMax)
	return q, err
}

// intParam reads an optional integer query parameter in 1..max.
func intParam(c *gin.Context, name string, max int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badRequest(codeInvalidArgument, fmt.Sprintf("%s %q must be an integer from 1 to %d", name, v, max))
	}
	return n, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
