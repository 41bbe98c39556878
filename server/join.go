package server

import (
	"fmt"
	"strings"
)

// The short form of joining a cluster: `harvestd --join HOST:PORT [agent
// flags …]` is `harvestd agent --join HOST:PORT …`, as the design card and
// Consul's -join have it. Only --join on the command line selects the agent
// (HARVEST_JOIN alone does not); other flags before any command stay a usage
// error, with a hint.

// commandAgent is the command --join selects.
const commandAgent = "agent"

// topLevelFlags are the flags the binary itself takes, before a command.
var topLevelFlags = map[string]bool{"-h": true, "-help": true, "--help": true, "-v": true, "-version": true, "--version": true}

// impliedCommand returns args with "agent" inserted when they hold --join
// and no command: args[0] is the program, args[1] its first argument.
func impliedCommand(args []string, name string) ([]string, error) {
	if len(args) < 2 || !strings.HasPrefix(args[1], "-") || topLevelFlags[args[1]] {
		return args, nil
	}
	if !hasJoin(args[1:]) {
		return nil, &usageError{msg: fmt.Sprintf(
			"%s comes after a command: %s agent %s … runs a cluster node, %s --join HOST:PORT … joins a cluster, %s dev runs one node (see %s --help)",
			args[1], name, args[1], name, name, name)}
	}
	out := make([]string, 0, len(args)+1)
	return append(append(append(out, args[0]), commandAgent), args[1:]...), nil
}

// hasJoin reports whether flags (up to a "--") hold --join in any of its
// spellings.
func hasJoin(flags []string) bool {
	for _, f := range flags {
		if f == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if strings.HasPrefix(f, "-") && name == flagJoin {
			return true
		}
	}
	return false
}

// usageError is a command line the binary cannot run, with what to type
// instead.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
