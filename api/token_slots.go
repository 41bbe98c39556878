package api

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
)

// A token's long-lived requests: however many long polls (?wait=) and
// event streams the node may hold (Limits.MaxLongLived), one token may
// hold at most Limits.MaxLongLivedPerToken of them at once, so one
// client (a read token included) cannot take the node's room or its
// memory. One more gets 429 too_many_long_polls with Retry-After: 1.
//
// The cap counts a token's requests on the node the client called: a
// request another node forwarded was counted there (it holds its slot
// for as long as it relays), so the owner does not count it twice.
// Without authentication there are no tokens, and only the node-wide
// limit applies.

// codeTooManyLongPolls refuses a token over its cap of long-lived
// requests.
const codeTooManyLongPolls = "too_many_long_polls"

// tokenSlots counts each token's long-lived requests in flight.
type tokenSlots struct {
	limit int
	mu    sync.Mutex
	held  map[string]int
}

func newTokenSlots(limit int) *tokenSlots { return &tokenSlots{limit: limit, held: map[string]int{}} }

// take takes a slot of token's, or reports false when it holds its cap.
func (t *tokenSlots) take(token string) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[token] >= t.limit {
		return nil, false
	}
	t.held[token]++
	return func() { t.give(token) }, true
}

func (t *tokenSlots) give(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[token]--; t.held[token] <= 0 {
		delete(t.held, token)
	}
}

// admitToken takes a slot of the caller's token for a long-lived
// request; release is a no-op when the request is not counted (no
// token, or forwarded by another node).
func (s *Server) admitToken(c *gin.Context) (release func(), err *apiError) {
	token := identity(c).TokenID
	if token == "" || fromNode(c) {
		return func() {}, nil
	}
	release, ok := s.shedder.perToken.take(token)
	if ok {
		return release, nil
	}
	n := s.shedder.perToken.limit
	c.Header("Retry-After", "1")
	return nil, &apiError{status: http.StatusTooManyRequests, code: codeTooManyLongPolls,
		msg:   fmt.Sprintf("this token holds its limit of %d long polls and event streams on this node; close one, or retry", n),
		extra: gin.H{"max_per_token": n, "retry_after_s": 1}}
}
