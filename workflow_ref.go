package harvest

// WorkflowType is what a client needs of a workflow to start its runs and
// read their results: the name and the input and output types. Both the
// definition (*Workflow) and a reference (WorkflowRef) satisfy it, so a
// client process can use the worker's definition when it links the
// worker's code, or a reference when it does not.
type WorkflowType[In, Out any] interface {
	// Name is the registered name.
	Name() string
	// Ref is the workflow's reference: its name and its types.
	Ref() WorkflowReference[In, Out]
}

// WorkflowReference names a workflow and its input and output types
// without its code, for clients. Build it with WorkflowRef. It cannot be
// registered: a node needs the definition.
type WorkflowReference[In, Out any] struct {
	name string
}

var (
	_ WorkflowType[int, int] = WorkflowReference[int, int]{}
	_ WorkflowType[int, int] = (*Workflow[int, int])(nil)
)

// WorkflowRef references the workflow registered as name, with input In
// and output Out, for a client that does not link the worker's code:
//
//	payout := harvest.WorkflowRef[PayoutInput, PayoutResult]("payout")
//
// Nothing checks that the worker's types match; the worker's own
// definition, where it can be shared, cannot drift.
func WorkflowRef[In, Out any](name string) WorkflowReference[In, Out] {
	return WorkflowReference[In, Out]{name: name}
}

// Name is the workflow name.
func (r WorkflowReference[In, Out]) Name() string { return r.name }

// Ref returns r.
func (r WorkflowReference[In, Out]) Ref() WorkflowReference[In, Out] { return r }

// Ref is the reference of the definition: its name and its types.
func (w *Workflow[In, Out]) Ref() WorkflowReference[In, Out] { return WorkflowRef[In, Out](w.name) }
