// Package harvest is a stub of the Go SDK: the names workflowcheck knows.
// Its own goroutine is never reported: the SDK is not followed.
package harvest

import (
	"context"
	"time"
)

// Context is workflow code's context.
type Context interface{ Now() time.Time }

// Workflow is a workflow definition.
type Workflow[In, Out any] struct {
	fn func(Context, In) (Out, error)
}

// NewWorkflow declares a workflow.
func NewWorkflow[In, Out any](name string, fn func(ctx Context, in In) (Out, error)) *Workflow[In, Out] {
	return &Workflow[In, Out]{fn: fn}
}

// ActivityContext is an activity's context.
type ActivityContext struct{ context.Context }

// Activity is an activity definition.
type Activity[In, Out any] struct {
	fn func(*ActivityContext, In) (Out, error)
}

// NewActivity declares an activity.
func NewActivity[In, Out any](name string, fn func(ctx *ActivityContext, in In) (Out, error)) *Activity[In, Out] {
	return &Activity[In, Out]{fn: fn}
}

// Go starts a workflow coroutine.
func Go(ctx Context, fn func(ctx Context)) { go fn(ctx) }

// SideEffect records fn's result once.
func SideEffect[T any](ctx Context, fn func() T) (T, error) { return fn(), nil }

// Sleep is a durable sleep.
func Sleep(ctx Context, d time.Duration) error { return nil }
