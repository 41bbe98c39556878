package maint

import "github.com/harvestd/harvest/engine/internal/runs"

// Deps is what the maintenance services use (the fence, the pool,
// runs.Settle, the crash hook, a logger, the clock's offset and the poll
// tick); the engine fills it.
type Deps = runs.Service
