package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// Limits on JSON numbers, far inside what PostgreSQL's jsonb (numeric)
// stores: at most 131072 digits before the decimal point and 16383 after,
// with an exponent expanded into digits. A literal of maxNumberLen
// characters with an exponent within ±maxNumberExp has at most 2024
// digits on either side.
const (
	maxNumberLen = 1000
	maxNumberExp = 1000
)

// jsonValues walks a syntactically valid JSON text and refuses the values
// PostgreSQL's jsonb cannot store: the \u0000 escape, lone UTF-16
// surrogates and numbers outside the limits above. Errors name the field
// by its path from root ("input.items[2]").
type jsonValues struct {
	b    []byte
	i    int
	path []string
}

// checkJSONValues checks the valid JSON text b, whose value is named root
// ("" when b is an object whose keys are the field names).
func checkJSONValues(b []byte, root string) error {
	v := &jsonValues{b: b}
	if root != "" {
		v.path = []string{root}
	}
	return v.value()
}

func (v *jsonValues) value() error {
	v.skipSpace()
	if v.i >= len(v.b) {
		return nil
	}
	switch c := v.b[v.i]; {
	case c == '{':
		return v.object()
	case c == '[':
		return v.array()
	case c == '"':
		_, err := v.str()
		return err
	case c == '-' || c >= '0' && c <= '9':
		return v.number()
	}
	for v.i < len(v.b) && v.b[v.i] >= 'a' && v.b[v.i] <= 'z' { // true, false, null
		v.i++
	}
	return nil
}

func (v *jsonValues) object() error {
	v.i++ // {
	for {
		v.skipSpace()
		if v.b[v.i] == '}' {
			v.i++
			return nil
		}
		if v.b[v.i] == ',' {
			v.i++
			v.skipSpace()
		}
		key, err := v.str()
		if err != nil {
			return err
		}
		v.skipSpace()
		v.i++ // :
		v.path = append(v.path, key)
		if err := v.value(); err != nil {
			return err
		}
		v.path = v.path[:len(v.path)-1]
		v.skipSpace()
	}
}

func (v *jsonValues) array() error {
	v.i++ // [
	for n := 0; ; n++ {
		v.skipSpace()
		switch v.b[v.i] {
		case ']':
			v.i++
			return nil
		case ',':
			v.i++
		}
		v.path = append(v.path, "["+strconv.Itoa(n)+"]")
		if err := v.value(); err != nil {
			return err
		}
		v.path = v.path[:len(v.path)-1]
		v.skipSpace()
	}
}

// str checks the string at v.i and returns its raw text (escapes kept).
func (v *jsonValues) str() (string, error) {
	start := v.i + 1
	for v.i++; v.b[v.i] != '"'; v.i++ {
		if v.b[v.i] != '\\' {
			continue
		}
		v.i++
		if v.b[v.i] != 'u' {
			continue
		}
		if err := v.escape(); err != nil {
			return "", err
		}
	}
	v.i++
	return string(v.b[start : v.i-1]), nil
}

// escape checks the \uXXXX escape whose 'u' is at v.i and leaves v.i on
// its last hex digit (or on the last digit of the low surrogate that
// completes a high one).
func (v *jsonValues) escape() error {
	r := v.hex(v.i + 1)
	v.i += 4
	switch {
	case r == 0:
		return v.fail(`strings must not contain \u0000 (PostgreSQL cannot store it)`)
	case r >= 0xdc00 && r <= 0xdfff:
		return v.fail(fmt.Sprintf(`\u%04x is a lone low surrogate (invalid Unicode)`, r))
	case r < 0xd800 || r > 0xdbff:
		return nil
	}
	if v.i+6 < len(v.b) && v.b[v.i+1] == '\\' && v.b[v.i+2] == 'u' {
		if lo := v.hex(v.i + 3); lo >= 0xdc00 && lo <= 0xdfff {
			v.i += 6
			return nil
		}
	}
	return v.fail(fmt.Sprintf(`\u%04x is a lone high surrogate (invalid Unicode)`, r))
}

// hex reads the four hex digits at b[at:]; valid JSON guarantees them.
func (v *jsonValues) hex(at int) rune {
	n, _ := strconv.ParseUint(string(v.b[at:at+4]), 16, 32)
	return rune(n)
}

func (v *jsonValues) number() error {
	start := v.i
	for v.i < len(v.b) && strings.IndexByte("+-0123456789.eE", v.b[v.i]) >= 0 {
		v.i++
	}
	lit := v.b[start:v.i]
	if len(lit) > maxNumberLen {
		return v.fail(fmt.Sprintf("a number of %d characters is longer than the limit of %d", len(lit), maxNumberLen))
	}
	if e := strings.IndexAny(string(lit), "eE"); e >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(string(lit[e+1:]), "+"))
		if err != nil || exp < -maxNumberExp || exp > maxNumberExp {
			return v.fail(fmt.Sprintf("number %s has an exponent outside -%d..%d", lit, maxNumberExp, maxNumberExp))
		}
	}
	return nil
}

func (v *jsonValues) skipSpace() {
	for v.i < len(v.b) && strings.IndexByte(" \t\r\n", v.b[v.i]) >= 0 {
		v.i++
	}
}

// fail is the 400 naming the field the walk is in.
func (v *jsonValues) fail(msg string) error {
	field := v.field()
	return &apiError{status: http.StatusBadRequest, code: codeInvalidJSON, msg: fmt.Sprintf("field %q: %s", field, msg),
		extra: gin.H{"field": field}}
}

// field renders the path: keys joined by dots, indexes appended.
func (v *jsonValues) field() string {
	var sb strings.Builder
	for _, p := range v.path {
		if sb.Len() > 0 && !strings.HasPrefix(p, "[") {
			sb.WriteByte('.')
		}
		sb.WriteString(unquoteKey(p))
	}
	if sb.Len() == 0 {
		return "body"
	}
	return sb.String()
}

// unquoteKey decodes a raw object key's escapes; index segments pass.
func unquoteKey(raw string) string {
	if strings.HasPrefix(raw, "[") || !strings.Contains(raw, `\`) {
		return raw
	}
	var s string
	if err := json.Unmarshal([]byte(`"`+raw+`"`), &s); err != nil {
		return raw
	}
	return s
}
