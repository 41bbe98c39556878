package main

import (
	"cmp"
	"encoding/json"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func flowCommand() *cli.Command {
	return &cli.Command{
		Name:   "flow",
		Usage:  "show flow control: the concurrency limits in force and, per shard, each key's runs running and queued",
		Action: flowAction,
	}
}

func flowAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	st, err := s.api.Flow(c.Context)
	if err != nil {
		return failed(err)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return failed(err)
	}
	return s.emit(raw, func(tw *tabwriter.Writer) { flowTable(tw, st) })
}

// flowTable lists the limits, then the keys in use.
func flowTable(tw *tabwriter.Writer, st *client.FlowStatus) {
	row(tw, "WORKFLOW", "MAX RUNNING", "KEY POINTER", "SCOPE")
	for _, l := range st.Limits {
		row(tw, l.WorkflowName, strconv.Itoa(l.MaxRunning), l.KeyPointer, cmp.Or(l.Scope, "shard"))
	}
	row(tw, "")
	row(tw, "SHARD", "WORKFLOW", "KEY", "RUNNING", "QUEUED")
	for _, k := range st.Keys {
		row(tw, strconv.Itoa(int(k.Shard)), k.WorkflowName, strconv.Quote(k.Key),
			strconv.FormatInt(k.Running, 10), strconv.FormatInt(k.Queued, 10))
	}
	if len(st.ActivityLimits) > 0 {
		activityFlowTable(tw, st)
	}
	if st.Status == "partial" {
		row(tw, "")
		row(tw, "partial: shards not read", shardList(st.UnavailableShards))
	}
}

// activityFlowTable lists the activity limits, then their keys in use.
func activityFlowTable(tw *tabwriter.Writer, st *client.FlowStatus) {
	row(tw, "")
	row(tw, "ACTIVITY", "MAX RUNNING", "KEY POINTER", "PER SECOND", "BURST", "RATE KEY POINTER")
	for _, l := range st.ActivityLimits {
		max, rate, burst := "-", "-", "-" // no such limit
		if l.MaxRunning > 0 {
			max = strconv.Itoa(l.MaxRunning)
		}
		if l.PerSecond > 0 {
			rate, burst = strconv.FormatFloat(l.PerSecond, 'g', -1, 64), strconv.Itoa(l.Burst)
		}
		row(tw, l.ActivityName, max, l.KeyPointer, rate, burst, l.RateKeyPointer)
	}
	row(tw, "")
	row(tw, "SHARD", "ACTIVITY", "KEY", "RUNNING", "WAITING")
	for _, k := range st.Activities {
		row(tw, strconv.Itoa(int(k.Shard)), k.ActivityName, strconv.Quote(k.Key),
			strconv.FormatInt(k.Running, 10), strconv.FormatInt(k.Waiting, 10))
	}
}
