package auth

import (
	"encoding/json"
	"fmt"
)

// Scope is what a token may do. Each scope implies the ones below it.
type Scope uint8

// Scopes, least first. The zero Scope allows nothing.
const (
	ScopeNone Scope = iota
	// ScopeRead: client GETs (runs, results, history, list, members,
	// routing, metrics).
	ScopeRead
	// ScopeWrite: start, signal, signal-with-start, cancel.
	ScopeWrite
	// ScopeAdmin: terminate, every /admin route, tokens, and starts whose
	// policy terminates a running run.
	ScopeAdmin
)

var scopeNames = [...]string{ScopeNone: "none", ScopeRead: "read", ScopeWrite: "write", ScopeAdmin: "admin"}

// ParseScope reads "read", "write" or "admin".
func ParseScope(s string) (Scope, error) {
	for i, name := range scopeNames {
		if name == s && Scope(i) != ScopeNone {
			return Scope(i), nil
		}
	}
	return ScopeNone, fmt.Errorf("%w: %q (want read, write or admin)", ErrUnknownScope, s)
}

// String is the scope's name.
func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", s)
}

// Allows reports whether s covers need.
func (s Scope) Allows(need Scope) bool { return need != ScopeNone && s >= need }

// MarshalJSON writes the scope's name.
func (s Scope) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a scope's name, "none" included (a stored record
// always decodes; ParseScope is for what users send).
func (s *Scope) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	if name == scopeNames[ScopeNone] {
		*s = ScopeNone
		return nil
	}
	v, err := ParseScope(name)
	if err != nil {
		return err
	}
	*s = v
	return nil
}
