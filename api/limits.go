package api

import (
	"errors"
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
	return l
}

// Validate reports invalid limits.
func (l Limits) Validate() error {
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate < 0 {
		return errors.New("api limits: rate must be a non-negative number")
	}
	if l.Burst < 0 || l.MaxInFlight < 0 || l.MaxLongLived < 0 {
		return errors.New("api limits: burst, max in flight and max long-lived must not be negative")
	}
	return nil
}
