package harvest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrInvalidInput matches every *InputError.
var ErrInvalidInput = errors.New("input does not match the workflow's schema")

// Violation is one way an input fails its schema.
type Violation struct {
	// Path is a JSON pointer into the input ("" is the whole input).
	Path    string `json:"path"`
	Message string `json:"message"`
}

// InputError lists the violations of a workflow input against its schema.
type InputError struct {
	Workflow   string
	Violations []Violation
}

func (e *InputError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = fmt.Sprintf("%s: %s", cmpOr(v.Path, "/"), v.Message)
	}
	return fmt.Sprintf("input of workflow %s does not match its schema: %s", e.Workflow, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// WithInputSchema declares a JSON Schema (draft 2020-12 unless the schema
// says otherwise) that the input of every fresh start must satisfy; a
// start that does not gets its violations back (HTTP 422). Keyed replays
// of committed starts are never validated again. The schema is compiled
// when the workflow is registered.
func (w *Workflow[In, Out]) WithInputSchema(schema json.RawMessage) *Workflow[In, Out] {
	w.schema = schema
	return w
}

func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input schema of workflow %s: %w", name, err)
	}
	url := "harvest://workflows/" + name + "/input.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("input schema of workflow %s: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("input schema of workflow %s: %w", name, err)
	}
	return sch, nil
}

// ValidateInput checks input against the workflow's schema, if it has one;
// violations come back as *InputError.
func (r *Registry) ValidateInput(name string, input json.RawMessage) error {
	def, ok := r.workflow(name)
	if !ok || def.schema == nil {
		return nil
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("null")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return &InputError{Workflow: name, Violations: []Violation{{Message: "input is not JSON: " + err.Error()}}}
	}
	err = def.schema.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &InputError{Workflow: name}
	collectViolations(ve.BasicOutput(), &out.Violations)
	if len(out.Violations) == 0 {
		out.Violations = []Violation{{Message: ve.Error()}}
	}
	return out
}

func collectViolations(u *jsonschema.OutputUnit, into *[]Violation) {
	if u == nil {
		return
	}
	if u.Error != nil && len(u.Errors) == 0 {
		*into = append(*into, Violation{Path: u.InstanceLocation, Message: u.Error.String()})
	}
	for i := range u.Errors {
		collectViolations(&u.Errors[i], into)
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
