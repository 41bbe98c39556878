package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"

	"github.com/gin-gonic/gin"
)

// Batch starts: POST /workflows/batch_start.
//
// A batch is a list of starts answered item by item, in order. Each item
// is served exactly as POST /workflows/{name}/start with the item as its
// body would be: the same checks, placement, keyed replay and forwarding
// to its shard's owner, so every item keeps the seed's keyed semantics and
// a batch re-sent after a lost answer creates nothing new. The items run
// concurrently (batchWorkers at a time), so the items of one shard share
// the shard's group commit. A batch holds at most maxBatchItems items and
// batchBodyFactor × MaxBodyBytes of JSON; each item's own body is limited
// as a single start's is. Under a rate limit every item counts as one
// request of the caller's token (chargeItems), before any item runs.

const (
	// maxBatchItems is the most items one batch holds; more answer 413.
	maxBatchItems = 1000
	// batchBodyFactor × Config.MaxBodyBytes is a batch's body limit.
	batchBodyFactor = 10
	// batchWorkers is how many items of one batch run at once.
	batchWorkers = 64
)

// batchBody is the body of POST /workflows/batch_start.
type batchBody struct {
	Items []json.RawMessage `json:"items"`
	// Atomic asks for all or nothing on one shard (batch_atomic.go).
	Atomic bool   `json:"atomic"`
	raw    []byte // the body as sent, forwarded whole when atomic
}

// batchItem is one item: the start route's name and body fields.
type batchItem struct {
	WorkflowName   string          `json:"workflow_name"`
	WorkflowID     string          `json:"workflow_id,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	IdempotencyKey *string         `json:"idempotency_key,omitempty"`
}

// batchStart handles POST /workflows/batch_start.
func (s *Server) batchStart(c *gin.Context) {
	body, err := s.readBatch(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if e := s.chargeItems(c, len(body.Items)); e != nil {
		abort(c, e)
		return
	}
	if body.Atomic {
		s.batchAtomic(c, body)
		return
	}
	caller := c.Copy() // its keys: the verified identity and scopes
	results := make([]json.RawMessage, len(body.Items))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(batchWorkers, len(body.Items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = s.batchOne(c, caller.Keys, body.Items[i])
			}
		}()
	}
	for i := range body.Items {
		work <- i
	}
	close(work)
	wg.Wait()
	c.JSON(http.StatusOK, gin.H{"results": results})
}

// readBatch reads and checks a batch's body.
func (s *Server) readBatch(c *gin.Context) (*batchBody, error) {
	raw, err := s.readBodyLimit(c, batchBodyFactor*s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	var body batchBody
	if err := decodeObject(raw, &body); err != nil {
		return nil, err
	}
	body.raw = raw
	switch {
	case len(body.Items) == 0:
		return nil, badRequest(codeInvalidArgument, "items is empty")
	case len(body.Items) > maxBatchItems:
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: fmt.Sprintf("a batch holds at most %d items, this one %d", maxBatchItems, len(body.Items))}
	}
	return &body, nil
}

// batchOne serves one item as its own start (batch_direct.go when it
// can, else by emulating the start route) and returns its answer with its
// status: {"status": 201, "execution_id": …} or {"status": 4xx,
// "error": …, "code": …}.
func (s *Server) batchOne(c *gin.Context, keys map[any]any, raw json.RawMessage) json.RawMessage {
	var item batchItem
	if err := decodeObject(raw, &item); err != nil {
		e := s.classify(c, err)
		return itemAnswer(e.status, errorBody(e))
	}
	if item.WorkflowName == "" {
		return itemAnswer(http.StatusBadRequest, errorBody(badRequest(codeInvalidArgument, "workflow_name is empty")))
	}
	if answer, ok := s.batchDirect(c, &item, len(raw)); ok {
		return answer
	}
	body, err := json.Marshal(startItemBody(item))
	if err != nil {
		return itemAnswer(http.StatusBadRequest, errorBody(badRequest(codeInvalidJSON, err.Error())))
	}
	w := httptest.NewRecorder()
	s.start(s.itemContext(c, keys, w, item.WorkflowName, body))
	return itemAnswer(w.Code, w.Body.Bytes())
}

// startItemBody is an item's body as POST /workflows/{name}/start reads it.
func startItemBody(item batchItem) map[string]any {
	out := map[string]any{}
	if item.WorkflowID != "" {
		out["workflow_id"] = item.WorkflowID
	}
	if item.Input != nil {
		out["input"] = item.Input
	}
	if item.IdempotencyKey != nil {
		out["idempotency_key"] = *item.IdempotencyKey
	}
	return out
}

// itemContext is a gin context for one item's start: the batch's caller
// (its verified identity and scopes) and request context, the start
// route's path and the item's body; the answer goes to w.
func (s *Server) itemContext(c *gin.Context, keys map[any]any, w http.ResponseWriter, name string, body []byte) *gin.Context {
	ic := gin.CreateTestContextOnly(w, s.gin)
	path := BasePath + "/workflows/" + url.PathEscape(name) + "/start"
	ic.Request = httptest.NewRequestWithContext(c.Request.Context(), http.MethodPost, path, bytes.NewReader(body))
	ic.Request.Header.Set("Content-Type", "application/json")
	ic.Params = gin.Params{{Key: "id", Value: name}}
	ic.Keys = maps.Clone(keys)
	return ic
}

// itemAnswer adds the item's status to its answer object.
func itemAnswer(status int, body []byte) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil || fields == nil {
		fields = map[string]json.RawMessage{"error": jsonString(string(body))}
	}
	fields["status"] = json.RawMessage(fmt.Sprint(status))
	out, _ := json.Marshal(fields)
	return out
}

func errorBody(e *apiError) []byte {
	body := gin.H{"error": e.msg, "code": e.code}
	for k, v := range e.extra {
		body[k] = v
	}
	out, _ := json.Marshal(body)
	return out
}

func jsonString(s string) json.RawMessage {
	out, _ := json.Marshal(s)
	return out
}
