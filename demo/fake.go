package demo

import (
	"context"
	"fmt"
	"sync"
)

// Fake is a downstream service that deduplicates by idempotency key: the
// first call with a key performs the effect, later calls with the same key
// return the first result. Every call is recorded.
type Fake struct {
	name string

	mu      sync.Mutex
	calls   map[string]int
	effects map[string]string
	order   []string

	// AfterEffect, if set, runs after the effect is recorded and before
	// the call returns: tests use it to crash between the downstream call
	// and the engine recording the activity's completion.
	AfterEffect func(ctx context.Context, key string) error
}

// NewFake returns an empty fake named name.
func NewFake(name string) *Fake {
	return &Fake{name: name, calls: map[string]int{}, effects: map[string]string{}}
}

// Do performs the effect for key once and returns its id.
func (f *Fake) Do(ctx context.Context, key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%s: empty idempotency key", f.name)
	}
	f.mu.Lock()
	f.calls[key]++
	id, ok := f.effects[key]
	if !ok {
		id = fmt.Sprintf("%s_%d", f.name, len(f.effects)+1)
		f.effects[key] = id
		f.order = append(f.order, key)
	}
	hook := f.AfterEffect
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, key); err != nil {
			return "", err
		}
	}
	return id, nil
}

// Calls is how many times key was used.
func (f *Fake) Calls(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

// Effects is how many distinct effects happened.
func (f *Fake) Effects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.effects)
}

// Keys lists the keys that caused effects, in order.
func (f *Fake) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.order...)
}

// TotalCalls is the number of calls with any key.
func (f *Fake) TotalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

// Services are the fakes the demo activities call.
type Services struct {
	Payments *Fake
	Refunds  *Fake
	UserDB   *Fake
	Mailer   *Fake
}

// NewServices returns fresh fakes.
func NewServices() *Services {
	return &Services{Payments: NewFake("ch"), Refunds: NewFake("re"), UserDB: NewFake("user"), Mailer: NewFake("mail")}
}
