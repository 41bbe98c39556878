// Command harvestctl is the command-line client of harvestd. It talks to
// any node over the HTTP API through package client, so the CLI and the Go
// client never drift apart.
//
//	harvestctl [--addr URL] [--token T] [--output table|json] workflow <command> …
//	harvestctl [--addr URL] [--token T] [--output table|json] cluster members|routing|peers|remove-peer …
//	harvestctl [--addr URL] [--token T] [--output table|json] shard list|status|add|drain|undrain …
//	harvestctl [--addr URL] [--token T] [--output table|json] gate close|open|list …
//	harvestctl [--addr URL] [--token T] [--output table|json] token create|list|revoke …
//
// The shard and cluster peers commands administer the raft shard catalog
// of nodes started with raft flags; writes go to the raft leader through
// whichever node --addr names. "shard drain" first shows what the shard
// still holds inside the idempotency window; the server refuses an unsafe
// drain (the last writable shard, an unreachable one) unless --force, and
// with --wait the command follows the drain until the shard is read_only.
// The gate commands close, open and list the admission gates that refuse
// fresh starts of the cluster, of a workflow name or of a shard.
// The token commands mint, list and revoke the bearer tokens of a node
// started with --auth tokens; --token (or HARVEST_TOKEN) carries the
// token every command sends, and a refused one (HTTP 401 or 403) is
// reported with a hint naming the scope the command needs.
// Requests are retried as package client's DefaultRetryPolicy allows (503
// unavailable, refused connections, lost answers of keyed requests), always
// with the same Idempotency-Key.
// With --output json, stdout carries only the server's JSON and such
// explanations and progress go to stderr.
//
// Exit codes: 0 success; 1 the server refused the request or could not be
// reached (the server's message is printed as
// "error: <message> (<code>, HTTP <status>)"); 2 a usage mistake; 3
// "workflow result" waited and the run is still running.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/harvestd/harvest/client"
)

// Exit codes.
const (
	exitOK           = 0
	exitFailure      = 1
	exitUsage        = 2
	exitStillRunning = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the app on args (args[0] is the program name) and returns the
// exit code; errors are printed to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := newApp(stdout, stderr).RunContext(ctx, args)
	return report(stderr, err)
}

// failure is an error met while doing the request (exit 1), as opposed to
// a usage mistake.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

// failed marks err, from the client or the output, as a failure.
func failed(err error) error {
	if err == nil {
		return nil
	}
	return failure{err}
}

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// stillRunning reports a result wait that ended before the run closed.
type stillRunning struct{ msg string }

func (e stillRunning) Error() string { return e.msg }

// errHelpShown ends a command after it printed its help.
var errHelpShown = errors.New("help shown")

// report prints err and maps it to an exit code. Errors the CLI framework
// returns itself (bad flags, unknown commands) are usage errors.
func report(stderr io.Writer, err error) int {
	var (
		apiErr  *client.Error
		fail    failure
		running stillRunning
	)
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &apiErr):
		fmt.Fprintf(stderr, "error: %s (%s, HTTP %d)\n", apiErr.Message, codeOrNone(apiErr.Code), apiErr.Status)
		printHint(stderr, err)
		return exitFailure
	case errors.As(err, &fail):
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitFailure
	case errors.As(err, &running):
		fmt.Fprintln(stderr, running.msg)
		return exitStillRunning
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	return exitUsage
}

func codeOrNone(code string) string {
	if code == "" {
		return "no code"
	}
	return code
}
