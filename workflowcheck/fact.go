package workflowcheck

import "fmt"

// NonDeterministic is the fact exported for a function whose body, or a
// function it calls in the same module, does something a workflow must
// not. A workflow that calls the function is reported at the call.
type NonDeterministic struct {
	// Module is the path of the module that declares the function: calls
	// are followed only within one module.
	Module string
	// Cause is the first finding, with its file and line.
	Cause string
	// Via lists the functions between this one and the cause, if any.
	Via string
}

// AFact marks NonDeterministic as an analysis fact.
func (*NonDeterministic) AFact() {}

// String is the fact as the tests match it.
func (f *NonDeterministic) String() string {
	if f.Via == "" {
		return fmt.Sprintf("nondeterministic(%s)", f.Cause)
	}
	return fmt.Sprintf("nondeterministic(%s, via %s)", f.Cause, f.Via)
}

// describe is the fact as a call site's diagnostic tells it.
func (f *NonDeterministic) describe() string {
	if f.Via == "" {
		return f.Cause
	}
	return f.Cause + ", via " + f.Via
}
