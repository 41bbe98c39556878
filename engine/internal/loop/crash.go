package loop

import "context"

// CrashPoint names a step boundary where a test can stop the engine as a
// crash would (the engine's crashpoint.go lists them in order).
type CrashPoint string

// Crash is the test hook run at each crash point: it may block, and an
// error ends the step as if the process died there. Every real build
// leaves it nil.
type Crash func(ctx context.Context, p CrashPoint) error

// At runs the hook at p; nil without one.
func (c Crash) At(ctx context.Context, p CrashPoint) error {
	if c == nil {
		return nil
	}
	return c(ctx, p)
}
