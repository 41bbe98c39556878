// Package wftask runs workflow tasks inside a caller's transaction: it
// claims due tasks (the workflow loop), loads their histories, runs the
// workflow code on the run's cached state when the shard holds it
// (statecache.go) or on a replay of its history, turns the tasks'
// commands into runs.Changes, and writes them with the transaction's
// commit (RunAndWrite, which the completion batch of activities and the
// start batch's first tasks use too). It also answers queries.
//
// It is the one path the other paths and the services may import
// (docs/design-notes.md, "The engine in layers").
package wftask
