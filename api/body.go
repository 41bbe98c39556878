package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/harvestd/harvest"
)

// Limits on identifiers, checked before anything reaches the database.
const (
	maxNameLen = 256
	maxIDLen   = 1024
	maxKeyLen  = 1024
)

// bodyDeadline bounds reading a request's body by BodyReadTimeout. A
// request without a body gets no deadline: the server's background read
// of an idle connection must not fail while a long-poll holds the answer.
func (s *Server) bodyDeadline(c *gin.Context) {
	if c.Request.Body != nil && c.Request.Body != http.NoBody {
		_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
	}
	c.Next()
}

// readBody reads the whole body under the size limit and the read
// deadline, which it lifts once the body is read (net/http lifts it too
// when the body hits EOF): the answer may be held (?wait=) longer.
// A request of the node's own outbox or of another node is held to
// maxNodeBodyBytes instead: a client's body met the limit where it came
// in, and what the engine sends itself may be larger (a deferred batch's
// fire carries every input it collected).
func (s *Server) readBody(c *gin.Context) ([]byte, error) {
	if fromNode(c) {
		return s.readBodyLimit(c, max(s.cfg.MaxBodyBytes, maxNodeBodyBytes))
	}
	return s.readBodyLimit(c, s.cfg.MaxBodyBytes)
}

// maxNodeBodyBytes bounds the body of a node's request: about the
// largest value PostgreSQL's jsonb stores.
const maxNodeBodyBytes = 256 << 20

// readBodyLimit is readBody with its own size limit. A node request's
// body that is not the one its signature covers is refused (401) once
// read (checkBody).
func (s *Server) readBodyLimit(c *gin.Context, limit int64) ([]byte, error) {
	r := http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	b, err := io.ReadAll(r)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: fmt.Sprintf("request body exceeds %d bytes", limit)}
	case errors.Is(err, errBodyDigest):
		e := unauthenticated("node request refused: " + errBodyDigest.Error())
		s.auditRefusal(c, c.Request.Method+" "+c.FullPath(), e)
		return nil, e
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.Header("Connection", "close")
		return nil, &apiError{status: http.StatusRequestTimeout, code: codeBodyTimeout,
			msg: fmt.Sprintf("request body not received within %s", s.cfg.BodyReadTimeout)}
	case err != nil:
		return nil, badRequest(codeInvalidJSON, "read request body: "+err.Error())
	}
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Time{})
	return b, nil
}

// decodeObject strictly decodes a JSON object body into dst: unknown
// fields, wrong types and trailing data are errors naming the problem. An
// empty body is the empty object.
func decodeObject(body []byte, dst any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	if body[0] != '{' {
		return badRequest(codeInvalidJSON, "request body must be a JSON object")
	}
	if err := checkUTF8(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return badRequest(codeInvalidJSON, describeJSONError(err))
	}
	if dec.More() {
		return badRequest(codeInvalidJSON, "malformed JSON: data after the object")
	}
	return checkJSONValues(body, "")
}

// decodePayload accepts any JSON value, named field in errors; an empty
// body is null.
func decodePayload(body []byte, field string) (json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(body) {
		var v any
		return nil, badRequest(codeInvalidJSON, describeJSONError(json.Unmarshal(body, &v)))
	}
	if err := checkUTF8(body); err != nil {
		return nil, err
	}
	if err := checkJSONValues(body, field); err != nil {
		return nil, err
	}
	return body, nil
}

func describeJSONError(err error) string {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return fmt.Sprintf("field %q: expected %s, got JSON %s", field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "malformed JSON: unexpected end of input"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

// checkUTF8 refuses what PostgreSQL cannot store at all: invalid UTF-8.
func checkUTF8(b []byte) error {
	if !utf8.Valid(b) {
		return badRequest(codeInvalidJSON, "JSON must be valid UTF-8")
	}
	return nil
}

// checkText validates an identifier: non-empty when required, valid
// UTF-8, no NUL or control characters, bounded length.
func checkText(field, v string, maxLen int, required bool) error {
	switch {
	case v == "" && required:
		return badRequest(codeInvalidArgument, field+" must not be empty")
	case len(v) > maxLen:
		return badRequest(codeInvalidArgument, fmt.Sprintf("%s is longer than %d bytes", field, maxLen))
	case !utf8.ValidString(v):
		return badRequest(codeInvalidArgument, field+" must be valid UTF-8")
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return badRequest(codeInvalidArgument, field+" must not contain control characters")
	}
	return nil
}

// textParam is an optional identifier to check with checkText.
type textParam struct {
	field, v string
	maxLen   int
}

// checkTexts checks optional identifiers in order; the first bad one fails.
func checkTexts(params ...textParam) error {
	for _, p := range params {
		if err := checkText(p.field, p.v, p.maxLen, false); err != nil {
			return err
		}
	}
	return nil
}

// idempotencyKey reads the Idempotency-Key header: present reports
// whether the header was sent (an empty header is an error, never "no key").
func idempotencyKey(c *gin.Context) (key string, present bool, err error) {
	vals, ok := c.Request.Header[http.CanonicalHeaderKey("Idempotency-Key")]
	if !ok {
		return "", false, nil
	}
	key = strings.TrimSpace(vals[0])
	if key == "" {
		return "", true, badRequest(codeInvalidArgument, "Idempotency-Key header must not be empty")
	}
	return key, true, checkKey(c, "Idempotency-Key", key)
}

// ReservedKeyPrefix starts the idempotency keys Harvest makes itself (a
// child's start, a signal one workflow sends another, …). A client's key
// with it is refused (400); another node's request may carry one.
const ReservedKeyPrefix = "hv:"

// checkKey checks an idempotency key a request sent in field.
func checkKey(c *gin.Context, field, key string) error {
	if err := checkText(field, key, maxKeyLen, true); err != nil {
		return err
	}
	if strings.HasPrefix(key, ReservedKeyPrefix) && !fromNode(c) {
		return badRequest(codeInvalidArgument, fmt.Sprintf("%s %q: keys starting with %q are reserved for the keys Harvest makes itself", field, key, ReservedKeyPrefix))
	}
	return nil
}

// checkWorkflowName checks a workflow name a request sent in field to
// start a run: the system workflows (harvest.IsSystemWorkflow) only nodes
// start.
func checkWorkflowName(c *gin.Context, field, name string) error {
	if err := checkText(field, name, maxNameLen, true); err != nil {
		return err
	}
	if harvest.IsSystemWorkflow(name) && !fromNode(c) {
		return badRequest(codeInvalidArgument, fmt.Sprintf("%s %q: workflows named %q… are reserved for the ones Harvest runs itself", field, name, harvest.SystemWorkflowPrefix))
	}
	return nil
}

// checkSignalName checks a signal name a request sent in field: names
// with the reserved prefix are the system signals (a child's close
// reaching its parent), which only nodes send.
func checkSignalName(c *gin.Context, field, name string) error {
	if err := checkText(field, name, maxNameLen, true); err != nil {
		return err
	}
	if strings.HasPrefix(name, ReservedKeyPrefix) && !fromNode(c) {
		return badRequest(codeInvalidArgument, fmt.Sprintf("%s %q: names starting with %q are reserved for the signals Harvest sends itself", field, name, ReservedKeyPrefix))
	}
	return nil
}
