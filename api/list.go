package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// listResponse is the answer of GET /workflows.
type listResponse struct {
	Workflows  []engine.Execution `json:"workflows"`
	NextCursor string             `json:"next_cursor,omitempty"`
	// Counts (with ?counts=true) sums the readable shards' counts by state.
	Counts map[string]int64 `json:"counts,omitempty"`
	// Status is "partial" when some shards could not be read.
	Status            string   `json:"status,omitempty"`
	UnavailableShards []uint16 `json:"unavailable_shards,omitempty"`
}

// list handles GET /workflows: every shard is asked for a page after the
// same (created_at, execution_id) cursor, and the pages are merged. The
// internal ?shard=N restricts the answer to one shard (used between nodes).
func (s *Server) list(c *gin.Context) {
	q, err := listQuery(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	shards, err := s.queryShards(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	pages, errs := eachShard(shards, func(shard uint16) (engine.ListPage, error) { return s.listShard(c, shard, q) })
	var out listResponse
	for i, err := range errs {
		if err == nil {
			continue
		}
		if len(shards) == 1 {
			s.fail(c, err)
			return
		}
		out.Status = "partial"
		out.UnavailableShards = append(out.UnavailableShards, shards[i])
	}
	out.Workflows, out.NextCursor = mergePages(pages, q)
	if q.Counts {
		out.Counts = sumCounts(pages, errs)
	}
	c.JSON(http.StatusOK, out)
}

func listQuery(c *gin.Context) (engine.ListQuery, error) {
	q := engine.ListQuery{States: c.QueryArray("state"), WorkflowName: c.Query("workflow_name"),
		WorkflowID: c.Query("workflow_id"), WorkflowIDPrefix: c.Query("workflow_id_prefix"), Cursor: c.Query("cursor")}
	for i, st := range q.States {
		q.States[i] = strings.ToUpper(st)
	}
	if err := checkTexts(textParam{"workflow_name", q.WorkflowName, maxNameLen}, textParam{"workflow_id", q.WorkflowID, maxIDLen},
		textParam{"workflow_id_prefix", q.WorkflowIDPrefix, maxIDLen},
		textParam{"cursor", q.Cursor, maxIDLen}); err != nil {
		return q, err
	}
	var err error
	if q.PageSize, err = intParam(c, "page_size", engine.ListPageMax); err != nil {
		return q, err
	}
	if q.PageSize == 0 {
		q.PageSize = engine.ListPageDefault
	}
	if err := listFilters(c, &q); err != nil {
		return q, err
	}
	switch c.Query("order") {
	case "", "desc":
	case "asc":
		q.Ascending = true
	default:
		return q, badRequest(codeInvalidArgument, "order must be asc or desc")
	}
	return q, nil
}

// listShard reads one shard's page, here or from its owner.
func (s *Server) listShard(c *gin.Context, shard uint16, q engine.ListQuery) (engine.ListPage, error) {
	t, err := s.router.ForShard(shard)
	if err != nil {
		return engine.ListPage{}, err
	}
	if t.Shard != nil {
		return t.Shard.List(c.Request.Context(), q)
	}
	if c.GetHeader(ForwardedHeader) != "" || t.URL == "" {
		return engine.ListPage{}, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: fmt.Sprintf("shard %d is not served here; owner %q", shard, t.Owner)}
	}
	return s.remoteList(c, t, q)
}

func (s *Server) remoteList(c *gin.Context, t Target, q engine.ListQuery) (engine.ListPage, error) {
	var page engine.ListPage
	err := s.readShard(c, t, "/workflows", "list", &page)
	return page, err
}

// eachShard reads every shard at once with read; the answers and errors
// are in the order of shards.
func eachShard[T any](shards []uint16, read func(uint16) (T, error)) ([]T, []error) {
	out := make([]T, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Go(func() { out[i], errs[i] = read(shard) })
	}
	wg.Wait()
	return out, errs
}

// queryShards is the shards a read over every shard asks: all of the
// catalog's, or the one the internal ?shard=N names (used between nodes).
func (s *Server) queryShards(c *gin.Context) ([]uint16, error) {
	shards := s.router.Shards()
	v, ok := c.GetQuery("shard")
	if !ok {
		return shards, nil
	}
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil || !slices.Contains(shards, uint16(n)) {
		return nil, badRequest(codeInvalidArgument, fmt.Sprintf("shard %q is not a shard of the catalog", v))
	}
	return []uint16{uint16(n)}, nil
}

// readShard sends the request's GET of path, with its query and
// ?shard=N, to t's owner (signed as this node, for the caller) and
// decodes the answer into out; what names the read in errors.
func (s *Server) readShard(c *gin.Context, t Target, path, what string, out any) error {
	v := c.Request.URL.Query()
	v.Set("shard", strconv.Itoa(int(t.ShardID)))
	req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodGet, t.URL+BasePath+path+"?"+v.Encode(), nil)
	if err != nil {
		return err
	}
	s.signNode(req, NodeSig{To: t.Owner, Identity: identity(c)})
	res, err := s.client.Do(req)
	if err != nil {
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: what + " shard: " + err.Error()}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return &apiError{status: res.StatusCode, code: codeUnavailable, msg: fmt.Sprintf("%s shard %d: HTTP %d", what, t.ShardID, res.StatusCode)}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode shard %d %s: %w", t.ShardID, what, err)
	}
	return nil
}

// mergePages merges per-shard pages (each sorted, each after the same
// cursor) into one page of q.PageSize and its cursor.
func mergePages(pages []engine.ListPage, q engine.ListQuery) ([]engine.Execution, string) {
	var all []engine.Execution
	more := false
	for _, p := range pages {
		all = append(all, p.Workflows...)
		more = more || p.NextCursor != ""
	}
	slices.SortFunc(all, func(a, b engine.Execution) int {
		c := a.CreatedAt.Compare(b.CreatedAt)
		if c == 0 {
			c = strings.Compare(a.ExecutionID.String(), b.ExecutionID.String())
		}
		if !q.Ascending {
			c = -c
		}
		return c
	})
	if len(all) > q.PageSize {
		all, more = all[:q.PageSize], true
	}
	if !more || len(all) == 0 {
		return nonNil(all), ""
	}
	return all, engine.ListCursor(all[len(all)-1])
}
