package auth

import (
	"cmp"
	"slices"
	"sync"
)

// Table is a token table in memory; it is a Source. Safe for concurrent
// use.
type Table struct {
	mu sync.RWMutex
	m  map[string]Token
}

// NewTable holds tokens.
func NewTable(tokens []Token) *Table {
	t := &Table{m: make(map[string]Token, len(tokens))}
	for _, tok := range tokens {
		t.m[tok.ID] = tok
	}
	return t
}

// Token implements Source; a Table is never stale.
func (t *Table) Token(id string) (Token, bool, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	tok, ok := t.m[id]
	return tok, ok, nil
}

// Put adds or replaces a token.
func (t *Table) Put(tok Token) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[tok.ID] = tok
}

// List returns every token, oldest first.
func (t *Table) List() []Token {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return Sorted(t.m)
}

// Len is the number of tokens, revoked ones included.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

// Sorted lists the tokens of m oldest first (ties by id).
func Sorted(m map[string]Token) []Token {
	out := make([]Token, 0, len(m))
	for _, tok := range m {
		out = append(out, tok)
	}
	slices.SortFunc(out, func(a, b Token) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}
