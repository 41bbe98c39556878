package payout

import (
	"context"
	"fmt"
	"sync"
)

// Bank is a fake downstream payment service that deduplicates by
// idempotency key, as Stripe and most payment APIs do: a call repeated
// with a key it has seen answers the first call's result and moves no
// money. Calls counts every call, Moved every call that moved money.
type Bank struct {
	mu    sync.Mutex
	seen  map[string]string
	Calls map[string]int // by operation
	Moved map[string]int // by operation
	// FailNext makes the next n calls of an operation fail before they
	// reach the bank (a timeout, say): the activity is retried.
	FailNext map[string]int
}

// NewBank returns an empty bank.
func NewBank() *Bank {
	return &Bank{seen: map[string]string{}, Calls: map[string]int{}, Moved: map[string]int{}, FailNext: map[string]int{}}
}

// Do runs operation op under key and returns its reference.
func (b *Bank) Do(_ context.Context, op, key string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Calls[op]++
	if b.FailNext[op] > 0 {
		b.FailNext[op]--
		return "", fmt.Errorf("%s: bank timed out", op)
	}
	if ref, ok := b.seen[key]; ok {
		return ref, nil
	}
	b.Moved[op]++
	ref := fmt.Sprintf("%s_%d", op, len(b.seen)+1)
	b.seen[key] = ref
	return ref, nil
}

// Counts returns how often op was called and how often it moved money.
func (b *Bank) Counts(op string) (calls, moved int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Calls[op], b.Moved[op]
}
