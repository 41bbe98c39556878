// Package batchop is the batch operation (issue 44): terminate, cancel,
// signal or reset every run a list filter matches, as one tracked job.
//
// A job adds no mechanism of its own to the engine's (the brief's
// invariant; docs/design-notes.md, "Batch operations"). It is a run of
// the system workflow WorkflowName, started by the keyed start claim
// under the job's idempotency key, so a retried creation finds the same
// job. The run pages through the matching runs in creation order with
// the list activity (a page's ids are recorded with its completion),
// performs each page with the apply activity and adds the page's counts
// to its progress, then waits out the job's rate. Every item is
// idempotent, so a crash anywhere repeats at most the page in flight,
// never an effect: a terminate of a terminated run changes nothing, a
// cancel request is recorded once per run, and a signal or a reset is
// keyed ItemKey(job, run), a duplicate on a repeat (a reset's key answers
// the new run it made). A page's counts are added
// once, from its recorded completion. The run continues as new every
// RunPages pages, carrying its cursor and progress; its progress is the
// query ProgressQuery, and its result once it closes. The stop signal
// StopSignal ends it after the page in flight (a system run is not
// cancelled by hand).
package batchop
