// Package metrics holds Harvest's Prometheus collectors. They live on a
// registry of their own (Registry), which harvestd serves at /metrics.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is the registry every Harvest collector is registered on.
var Registry = prometheus.NewRegistry()

// Collectors. Label values are fixed sets, never ids.
var (
	// Starts counts start requests by result: fresh, attached, deduplicated, rejected.
	Starts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harvest_starts_total", Help: "Workflow start requests by result (fresh, attached, deduplicated, rejected).",
	}, []string{"result"})
	// StartDedupHits counts starts answered from an idempotency claim.
	StartDedupHits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harvest_start_dedup_hits_total", Help: "Starts answered from a live idempotency claim.",
	})
	// StartBatchSize observes how many starts each group commit carried.
	StartBatchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "harvest_start_batch_size", Help: "Starts per group commit transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	})
	// StartBatches counts start batches by how they committed: "one_trip"
	// (every key assumed fresh, one round trip), "two_trips", and
	// "one_trip_missed" (an assumption did not hold; the batch then took two),
	// "one_trip_failed" (failed as a whole: its starts took the single path).
	StartBatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harvest_start_batches_total", Help: "Start batches by how they committed.",
	}, []string{"path"})
	// Signals counts signals by result: delivered, deduplicated.
	Signals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harvest_signals_total", Help: "Signals by result (delivered, deduplicated).",
	}, []string{"result"})
	// ActivityAttempts counts finished activity attempts by outcome.
	ActivityAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harvest_activity_attempts_total", Help: "Activity attempts by outcome (completed, retried, failed, timed_out).",
	}, []string{"outcome"})
	// WorkflowTaskSeconds observes workflow task latency (claim to commit).
	WorkflowTaskSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "harvest_workflow_task_seconds", Help: "Workflow task latency from claim to commit.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	// StateCacheLookups counts workflow tasks by how they found their run's
	// state: "hit" (cached), "miss" (replayed), "rebuilt" (cached but
	// stale or its step failed: replayed).
	StateCacheLookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harvest_state_cache_lookups_total", Help: "Workflow tasks by how they found their run's state (hit, miss, rebuilt).",
	}, []string{"result"})
	// StreamMemoryBytes is the bytes of history the node's event streams
	// hold right now (read, encoded or relayed): at most --stream-memory.
	StreamMemoryBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "harvest_stream_memory_bytes", Help: "Bytes of history event streams hold right now (at most --stream-memory).",
	})
	// FlowSlots counts the slots limited runs took, by workflow and how:
	// "start" (a free slot taken in the start) or "dispatch" (a queued run
	// promoted by the shard's dispatcher).
	FlowSlots = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harvest_flow_slots_total", Help: "Concurrency slots taken by limited runs, by workflow and how (start, dispatch).",
	}, []string{"workflow", "how"})
	// FlowQueued counts the runs of limited workflows created QUEUED; with
	// FlowSlots{how="dispatch"} it gives the queue's growth.
	FlowQueued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harvest_flow_queued_total", Help: "Runs of limited workflows created QUEUED, waiting for a slot, by workflow.",
	}, []string{"workflow"})
	// StreamMemoryWaits counts the pages event streams waited for the
	// stream memory budget before reading or relaying them.
	StreamMemoryWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harvest_stream_memory_waits_total", Help: "Pages event streams waited for the stream memory budget to read or relay.",
	})
)

func init() {
	Registry.MustRegister(Starts, StartDedupHits, StartBatchSize, StartBatches, Signals, ActivityAttempts, WorkflowTaskSeconds, StateCacheLookups,
		StreamMemoryBytes, StreamMemoryWaits, FlowSlots, FlowQueued,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Handler serves the registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry})
}
