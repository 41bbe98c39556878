package read

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/engine/internal/runs"
)

// Deps is what the reads use; the engine fills it.
type Deps struct {
	// Pool serves the reads (unfenced: any node may read a shard).
	Pool *pgxpool.Pool
	// Watch wakes a result poll when its run closes.
	Watch *runs.Watch
	// Owning reports whether this engine holds the lease: only then does
	// every close of a run fire Watch.
	Owning func() bool
	// Poll is the tick at which a result poll reads the run whatever
	// Watch says.
	Poll time.Duration
	// HistoryPageBytes bounds the event data of a history page.
	HistoryPageBytes int64
}

// Reader answers reads of the shard's runs.
type Reader struct{ d Deps }

// New makes a Reader.
func New(d Deps) *Reader { return &Reader{d: d} }
