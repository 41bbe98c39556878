package harvest

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Coroutine scheduling.
//
// Every coroutine of a run, the workflow function (coros[0]) and each one
// started with Go, runs on a carrier goroutine of its own (see carriers)
// and owns a resume/yield handshake with the driver. Only one of them runs
// at any time: the driver sets current, resumes it and waits until it
// yields (it blocks in await, recording what it waits for) or returns.
//
// step (replay.go), the scheduler, runs at the start and after each delivered event:
// it passes over the coroutines in creation order, resuming each one that
// is new or whose wait condition now holds, and repeats the pass until a
// pass resumes none: then every coroutine is blocked. A coroutine created
// during a pass runs later in the same pass. History order, creation order
// and pass order are fixed, so the interleaving, and with it the order of
// the commands and their ids (nextSeq), is the same on every replay.
//
// The run ends when the workflow function returns (done); the other
// coroutines are abandoned, as in Temporal: stop ends each of them
// through runtime.Goexit.

// coroutine is one deterministic thread of workflow code.
type coroutine struct {
	resume  chan bool // true: run on; false: exit
	yielded chan struct{}
	exited  chan struct{}
	waitFor func() bool // what it blocks on; nil before its first run
	done    bool
}

// arrival is a delivered signal not yet received.
type arrival struct {
	seq     int64
	name    string
	payload json.RawMessage
	key     string // its idempotency key, carried over by a continue-as-new
}

func never() bool { return false }

// Go starts fn as a coroutine of the workflow. It runs after the caller
// blocks, in the deterministic order the package doc describes, and may
// use every workflow API. It is abandoned when the workflow function
// returns.
func Go(ctx Context, fn func(ctx Context)) {
	s := ctx.state()
	if s.exiting {
		runtime.Goexit()
	}
	s.spawn(func() { s.runCoroutine(ctx, fn) })
}

func (s *runState) runCoroutine(ctx Context, fn func(ctx Context)) {
	defer func() {
		if r := recover(); r != nil {
			s.panicErr = &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	fn(ctx)
}

// spawn adds a coroutine that runs body when first resumed.
func (s *runState) spawn(body func()) {
	c := &coroutine{resume: make(chan bool), yielded: make(chan struct{}), exited: make(chan struct{})}
	s.coros = append(s.coros, c)
	carriers.run(func() {
		defer close(c.exited)
		if !<-c.resume {
			return
		}
		body()
		c.done = true
		c.yielded <- struct{}{}
	})
}

func (c *coroutine) runnable() bool {
	return !c.done && (c.waitFor == nil || c.waitFor())
}

// resumeOne runs c until it yields or returns.
func (s *runState) resumeOne(ctx context.Context, c *coroutine) error {
	s.current = c
	c.resume <- true
	select {
	case <-c.yielded:
		return nil
	case <-ctx.Done():
		s.stuck = true
		return fmt.Errorf("workflow code did not yield: %w", ctx.Err())
	}
}

// tick hands out the next delivery sequence number: futures resolved,
// signals arrived and channel values sent are numbered in the order they
// happen, which is history order, so Select can pick the earliest.
func (s *runState) tick() int64 {
	s.order++
	return s.order
}
