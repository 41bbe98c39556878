package api

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// Load shedding, step 0 of the check order right after authentication
// and before any work (keyed replays included): a token over its rate
// gets 429 rate_limited, and a request beyond this node's in-flight limit
// 503 overloaded, both with Retry-After. Long polls and event streams
// have a limit of their own (Limits.MaxLongLived), so holding many of
// them never refuses an ordinary request, and ordinary load never refuses
// them; each token may hold at most Limits.MaxLongLivedPerToken of them
// (token_slots.go).
//
// Only bearer routes are shed: open routes (health, readiness) and node
// routes (/internal/*, part of another node's request in progress) never
// are. A request another node forwarded is not charged to its token's
// rate again (the node the client called charged it), but it takes a
// slot of this node's in-flight limits: the owner protects itself, and
// its 503 travels back to the client unchanged.

// Codes of the shedding refusals.
const (
	codeRateLimited = "rate_limited"
	codeOverloaded  = "overloaded"
)

// maxRateBuckets is how many token buckets are kept before full (idle)
// ones are dropped.
const maxRateBuckets = 10000

// shedder holds a node's limits.
type shedder struct {
	ordinary chan struct{} // a slot per ordinary request in flight
	long     chan struct{} // a slot per long poll or stream
	perToken *tokenSlots   // each token's long polls and streams
	rates    *tokenRates   // nil: no rate limit
}

func newShedder(l Limits) *shedder {
	s := &shedder{ordinary: make(chan struct{}, l.MaxInFlight), long: make(chan struct{}, l.MaxLongLived),
		perToken: newTokenSlots(l.MaxLongLivedPerToken)}
	if l.Rate > 0 {
		s.rates = &tokenRates{limit: rate.Limit(l.Rate), burst: l.Burst, buckets: map[string]*rate.Limiter{}}
	}
	return s
}

// shed is the middleware of bearer routes; streams are long-lived
// whatever their query.
func (s *Server) shed(stream bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := s.limitRate(c); err != nil {
			abort(c, err)
			return
		}
		long := stream || isLongPoll(c)
		if long {
			release, err := s.admitToken(c)
			if err != nil {
				abort(c, err)
				return
			}
			defer release()
		}
		release, err := s.admit(long)
		if err != nil {
			abort(c, err)
			return
		}
		defer release()
		c.Next()
	}
}

// limitRate charges the caller's token bucket.
func (s *Server) limitRate(c *gin.Context) *apiError {
	if s.shedder.rates == nil || fromNode(c) {
		return nil
	}
	d := s.shedder.rates.delay(rateKey(c), s.now())
	if d <= 0 {
		return nil
	}
	secs := retryAfterSeconds(d)
	c.Header("Retry-After", strconv.Itoa(secs))
	return &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
		msg:   fmt.Sprintf("this token is over its rate of %g requests per second; retry in %d s", float64(s.shedder.rates.limit), secs),
		extra: gin.H{"retry_after_s": secs}}
}

// chargeItems charges a batch's further items to the caller's bucket
// (the request itself paid one at limitRate), after parsing and before
// any item runs: a batch over the bucket's room is refused whole with
// 429 and Retry-After, one larger than the bucket can ever hold with 413.
func (s *Server) chargeItems(c *gin.Context, items int) *apiError {
	r := s.shedder.rates
	if r == nil || fromNode(c) || items <= 1 {
		return nil
	}
	if items > r.burst {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg:   fmt.Sprintf("a batch of %d starts is more than this token's rate limit lets through at once (burst %d): split it", items, r.burst),
			extra: gin.H{"max_items": r.burst}}
	}
	d := r.delayN(rateKey(c), s.now(), items-1)
	if d <= 0 {
		return nil
	}
	secs := retryAfterSeconds(d)
	c.Header("Retry-After", strconv.Itoa(secs))
	return &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
		msg:   fmt.Sprintf("a batch of %d starts is over this token's rate of %g starts per second; retry in %d s", items, float64(r.limit), secs),
		extra: gin.H{"retry_after_s": secs}}
}

// chargePage charges a further page of an event stream to the caller's
// bucket, waiting for room (the stream slows down to the token's rate;
// it is already answered, so it is not refused). A stream another node
// forwarded is charged there.
func (s *Server) chargePage(ctx context.Context, c *gin.Context) error {
	if s.shedder.rates == nil || fromNode(c) {
		return nil
	}
	return s.shedder.rates.bucket(rateKey(c), s.now()).Wait(ctx)
}

// admit takes an in-flight slot of its kind, or refuses at once.
func (s *Server) admit(long bool) (release func(), err *apiError) {
	slots, kind := s.shedder.ordinary, "requests"
	if long {
		slots, kind = s.shedder.long, "long polls and streams"
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	default:
		return nil, &apiError{status: http.StatusServiceUnavailable, code: codeOverloaded,
			msg: fmt.Sprintf("this node is serving its limit of %d %s; retry, or use another node", cap(slots), kind)}
	}
}

// isLongPoll reports whether the request asks to wait (?wait= above 0).
func isLongPoll(c *gin.Context) bool {
	switch c.Query("wait") {
	case "", "0", "0s":
		return false
	}
	return true
}

// rateKey is the caller's bucket: its token, or without authentication
// its address.
func rateKey(c *gin.Context) string {
	if id := identity(c).TokenID; id != "" {
		return "token " + id
	}
	host, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		host = c.Request.RemoteAddr
	}
	return "addr " + host
}

// tokenRates is a token bucket per caller.
type tokenRates struct {
	limit   rate.Limit
	burst   int
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// delay takes a request from key's bucket at now: 0, or how long until
// it would have room (the request is then not charged).
func (r *tokenRates) delay(key string, now time.Time) time.Duration { return r.delayN(key, now, 1) }

// delayN takes n requests (at most the burst) at once from key's
// bucket: 0, or how long until it would have room for them (they are
// then not charged).
func (r *tokenRates) delayN(key string, now time.Time, n int) time.Duration {
	res := r.bucket(key, now).ReserveN(now, n)
	d := res.DelayFrom(now)
	if d > 0 {
		res.CancelAt(now)
	}
	return d
}

func (r *tokenRates) bucket(key string, now time.Time) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.buckets[key]; ok {
		return l
	}
	if len(r.buckets) >= maxRateBuckets {
		r.prune(now)
	}
	l := rate.NewLimiter(r.limit, r.burst)
	r.buckets[key] = l
	return l
}

// prune drops the full buckets: a new one is the same.
func (r *tokenRates) prune(now time.Time) {
	for k, l := range r.buckets {
		if l.TokensAt(now) >= float64(r.burst) {
			delete(r.buckets, k)
		}
	}
}

// retryAfterSeconds is a Retry-After of d in whole seconds, rounded up: a
// client that waits it never comes back before the slot opens.
func retryAfterSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}
