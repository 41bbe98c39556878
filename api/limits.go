package api

import (
	"errors"
	"fmt"
	"math"
)

// Defaults of Limits.
const (
	// MaxInFlightDefault bounds the ordinary requests one node serves at
	// once (generous: shedding is for overload, not for normal peaks).
	MaxInFlightDefault = 1024
	// MaxLongLivedDefault bounds the long polls (?wait=) and event
	// streams one node holds at once.
	MaxLongLivedDefault = 4096
	// MaxLongLivedPerTokenDefault bounds the long polls and event
	// streams one token holds on one node at once: a client rarely needs
	// more, and the node's limit and memory stay shared.
	MaxLongLivedPerTokenDefault = 32
	// StreamMemoryDefault bounds the history the node's event streams
	// hold at once (64 MiB): 8 pages of 4 MiB read and encoded at once.
	StreamMemoryDefault = 64 << 20
	// StreamMemoryMin is the smallest stream memory budget (2 MiB):
	// eight pages of 128 KiB.
	StreamMemoryMin = 2 << 20
)

// Limits are the API's load shedding limits (shed.go). Zero fields take
// the defaults; none may be negative.
type Limits struct {
	// Rate is each token's sustained requests per second (a token
	// bucket); over it a request gets 429 rate_limited with Retry-After.
	// Without authentication every client address has a bucket. 0 (the
	// default) turns the rate limit off.
	Rate float64
	// Burst is the bucket's size: how many requests a token may send at
	// once after being idle. Default: Rate rounded up, at least 1.
	Burst int
	// MaxInFlight bounds the ordinary requests this node serves at once;
	// one more gets 503 overloaded with Retry-After. Default
	// MaxInFlightDefault.
	MaxInFlight int
	// MaxLongLived bounds, apart from MaxInFlight, the long polls (a
	// result or start with ?wait=) and event streams this node holds at
	// once, so that they never take the ordinary requests' room: one more
	// gets 503 overloaded. Default MaxLongLivedDefault.
	MaxLongLived int
	// MaxLongLivedPerToken bounds the long polls and event streams one
	// token holds on this node at once (an admin token's too); one more
	// gets 429 too_many_long_polls with Retry-After. A request another
	// node forwarded counts on that node only. Without authentication
	// only MaxLongLived applies. Default MaxLongLivedPerTokenDefault.
	MaxLongLivedPerToken int
	// StreamMemory bounds, in bytes, the history this node's event
	// streams hold at once (pages read and being written, frames
	// relayed): a stream waits for room before it reads a page
	// (stream_budget.go). Default StreamMemoryDefault, at least
	// StreamMemoryMin.
	StreamMemory int64
}

func (l Limits) withDefaults() Limits {
	if l.Burst == 0 {
		l.Burst = max(1, int(math.Ceil(l.Rate)))
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = MaxInFlightDefault
	}
	if l.MaxLongLived == 0 {
		l.MaxLongLived = MaxLongLivedDefault
	}
	if l.MaxLongLivedPerToken == 0 {
		l.MaxLongLivedPerToken = MaxLongLivedPerTokenDefault
	}
	if l.StreamMemory == 0 {
		l.StreamMemory = StreamMemoryDefault
	}
	return l
}

// Validate reports invalid limits.
func (l Limits) Validate() error {
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate < 0 {
		return errors.New("api limits: rate must be a non-negative number")
	}
	if l.Burst < 0 || l.MaxInFlight < 0 || l.MaxLongLived < 0 || l.MaxLongLivedPerToken < 0 {
		return errors.New("api limits: burst, max in flight, max long-lived and max long-lived per token must not be negative")
	}
	if l.StreamMemory != 0 && l.StreamMemory < StreamMemoryMin {
		return fmt.Errorf("api limits: stream memory %d is under %d bytes", l.StreamMemory, StreamMemoryMin)
	}
	return nil
}
