package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/node"
)

// Names of the raft catalog flags of agent. Setting any of them turns the
// catalog on.
const (
	flagRaftAddr           = "raft-addr"
	flagAdvertiseRaft      = "advertise-raft"
	flagBootstrapExpect    = "bootstrap-expect"
	flagMaxVoters          = "max-voters"
	flagDrainCheckInterval = "drain-check-interval"
)

// raftFlagNames are the flags that turn the raft catalog on.
var raftFlagNames = []string{flagRaftAddr, flagAdvertiseRaft, flagBootstrapExpect, flagMaxVoters, flagDrainCheckInterval}

// raftAddrDefault binds raft on every interface, on Consul's server port;
// it then needs --advertise-raft.
var raftAddrDefault = net.JoinHostPort("0.0.0.0", strconv.Itoa(admin.BindPortDefault))

func raftFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagRaftAddr, Value: raftAddrDefault, EnvVars: []string{"HARVEST_RAFT_ADDR"},
			Usage: "host:port the raft shard catalog listens on (TCP). Setting any raft flag turns the catalog on"},
		&cli.StringFlag{Name: flagAdvertiseRaft, EnvVars: []string{"HARVEST_ADVERTISE_RAFT"},
			Usage: "IP:port other nodes reach raft at (default: the bound --raft-addr; required when that binds every interface)"},
		&cli.IntFlag{Name: flagBootstrapExpect, EnvVars: []string{"HARVEST_BOOTSTRAP_EXPECT"},
			Usage: "bootstrap a new raft cluster once this many nodes are alive in gossip; give every first node the same value " +
				"(0: join an existing cluster, whose leader adds this node)"},
		&cli.IntFlag{Name: flagMaxVoters, Value: admin.MaxVotersDefault, EnvVars: []string{"HARVEST_MAX_VOTERS"},
			Usage: "raft voters the leader keeps, 3 or 5; later nodes follow as non-voters"},
		&cli.DurationFlag{Name: flagDrainCheckInterval, Value: node.DrainCheckIntervalDefault, EnvVars: []string{"HARVEST_DRAIN_CHECK_INTERVAL"},
			Usage: "how often the leader checks whether a draining shard can become read_only"},
	}
}

// raftConfig reads the raft flags: nil (static --shard catalog) unless one
// of them is set.
func raftConfig(c *cli.Context) (*node.RaftConfig, error) {
	if !slices.ContainsFunc(raftFlagNames, c.IsSet) {
		return nil, nil
	}
	rc := &node.RaftConfig{
		BindAddr:           c.String(flagRaftAddr),
		AdvertiseAddr:      c.String(flagAdvertiseRaft),
		BootstrapExpect:    c.Int(flagBootstrapExpect),
		MaxVoters:          c.Int(flagMaxVoters),
		DrainCheckInterval: c.Duration(flagDrainCheckInterval),
	}
	if err := checkRaftAddrs(rc.BindAddr, rc.AdvertiseAddr); err != nil {
		return nil, err
	}
	if rc.MaxVoters != 3 && rc.MaxVoters != 5 {
		return nil, fmt.Errorf("--%s %d: want 3 or 5", flagMaxVoters, rc.MaxVoters)
	}
	if rc.BootstrapExpect < 0 || rc.BootstrapExpect > rc.MaxVoters {
		return nil, fmt.Errorf("--%s %d: want 0 (join an existing cluster) to %d (--%s)",
			flagBootstrapExpect, rc.BootstrapExpect, rc.MaxVoters, flagMaxVoters)
	}
	if rc.DrainCheckInterval <= 0 {
		return nil, fmt.Errorf("--%s %s: must be positive", flagDrainCheckInterval, rc.DrainCheckInterval)
	}
	return rc, nil
}

// checkRaftAddrs checks the raft bind address and refuses to advertise a
// wildcard one: peers would dial themselves.
func checkRaftAddrs(bind, advertise string) error {
	host, _, err := hostPort(flagRaftAddr, bind)
	if err != nil {
		return err
	}
	if advertise == "" {
		if wildcard(host) {
			return fmt.Errorf("--%s %s binds every interface: set --%s to the IP:port other nodes reach this one at",
				flagRaftAddr, bind, flagAdvertiseRaft)
		}
		return nil
	}
	ip, port, err := ipPort(flagAdvertiseRaft, advertise)
	if err != nil {
		return err
	}
	if wildcard(ip) || port == 0 {
		return fmt.Errorf("--%s %q: want a specific IP address and a non-zero port", flagAdvertiseRaft, advertise)
	}
	return nil
}

// wildcard reports whether a bind host means every interface.
func wildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}
