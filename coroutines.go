package harvest

import "sync/atomic"

// Workflow code runs as a coroutine on a goroutine of its own (see
// runState). Starting a fresh goroutine for every workflow task costs
// more than the task itself for short workflows: the new goroutine's
// stack grows, by copying, as deep as JSON decoding and the user's code
// go. So coroutines run on carriers, goroutines that outlive them: one
// whose coroutine returns waits for the next, up to a bound of idle
// carriers; one that a blocked run leaves through runtime.Goexit ends
// with it.

// carriers is the pool of every workflow coroutine.
var carriers = newCarrierPool(256)

// carrierPool hands functions to idle carrier goroutines.
type carrierPool struct {
	handoff chan func() // unbuffered: a send hands f to an idle carrier
	idle    atomic.Int32
	maxIdle int32
}

func newCarrierPool(maxIdle int32) *carrierPool {
	return &carrierPool{handoff: make(chan func()), maxIdle: maxIdle}
}

// run runs f on an idle carrier, or on a new one.
func (p *carrierPool) run(f func()) {
	select {
	case p.handoff <- f:
	default:
		go p.carry(f)
	}
}

func (p *carrierPool) carry(f func()) {
	for {
		f()
		if !p.becomeIdle() {
			return
		}
		f = <-p.handoff
		p.idle.Add(-1)
	}
}

// becomeIdle counts the caller among the idle carriers, unless there are
// maxIdle already.
func (p *carrierPool) becomeIdle() bool {
	for {
		n := p.idle.Load()
		if n >= p.maxIdle {
			return false
		}
		if p.idle.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
