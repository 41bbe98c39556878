package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// Net is N hosts on one machine: network namespace <id>1..<id>N, each with
// eth0 = <prefix>.(10+i)/24 attached through a veth pair to the bridge
// <id>-br = <prefix>.1/24 in the calling namespace (host 0, where
// PostgreSQL listens). The namespaces have no default route, so nothing
// leaves the machine.
//
// Faults are silent drops of non-ARP frames on the bridge (nftables bridge
// family), regenerated as one table on every change, so they apply and heal
// at once. Without nft, a peers partition falls back to blackhole routes in
// the namespaces and a full isolation to a link down (both are printed).
type Net struct {
	ID     string // at most 5 characters: interface names are limited to 15
	Prefix string // e.g. "10.77.0"
	N      int
	Logf   func(format string, args ...any)
	NoNFT  bool // use the fallbacks even when nft is installed

	mu     sync.Mutex
	nft    bool
	isoNFT map[int]bool // host -> fully isolated via nft
	peers  map[int]bool // host -> cut from the other hosts (DB still reachable)
	linkDn map[int]bool // host -> fallback isolation by link down
}

// bridgeMAC is fixed: a bridge otherwise takes the lowest port MAC, which
// changes as ports come and go and leaves stale ARP entries in the hosts.
const bridgeMAC = "02:77:00:00:00:01"

func (n *Net) ns(i int) string   { return fmt.Sprintf("%s%d", n.ID, i) }
func (n *Net) veth(i int) string { return fmt.Sprintf("%s-v%d", n.ID, i) }
func (n *Net) bridge() string    { return n.ID + "-br" }
func (n *Net) table() string     { return n.ID + "_faults" }
func (n *Net) Addr(i int) string {
	if i == 0 {
		return n.Prefix + ".1"
	}
	return fmt.Sprintf("%s.%d", n.Prefix, 10+i)
}

// run runs a command and returns its combined output as an error on failure.
func run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// NetnsAvailable reports why network namespaces cannot be used here ("" if
// they can): it tries a private network namespace with unshare.
func NetnsAvailable() string {
	if os.Geteuid() != 0 {
		return "needs root (network namespaces, veth, bridge, nftables)"
	}
	for _, tool := range []string{"ip", "unshare", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s not found on PATH", tool)
		}
	}
	if err := run("unshare", "--net", "--mount", "--pid", "--fork", "true"); err != nil {
		return fmt.Sprintf("cannot create network namespaces: %v", err)
	}
	return ""
}

// Up creates the bridge and the hosts; on error it removes what it made.
func (n *Net) Up() (err error) {
	_, lookErr := exec.LookPath("nft")
	n.nft = lookErr == nil && !n.NoNFT
	n.isoNFT, n.peers, n.linkDn = map[int]bool{}, map[int]bool{}, map[int]bool{}
	defer func() {
		if err != nil {
			n.Down()
		}
	}()
	steps := [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", n.bridge(), "address", bridgeMAC, "type", "bridge"},
		{"ip", "link", "set", n.bridge(), "type", "bridge", "forward_delay", "0", "stp_state", "0"},
		{"ip", "addr", "add", n.Addr(0) + "/24", "dev", n.bridge()},
		{"ip", "link", "set", n.bridge(), "up"},
	}
	for i := 1; i <= n.N; i++ {
		ns, v := n.ns(i), n.veth(i)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"ip", "link", "set", v, "master", n.bridge(), "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"}, // lo is down in a new namespace
			[]string{"ip", "-n", ns, "addr", "add", n.Addr(i) + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	if !n.nft {
		n.Logf("net: nft not found: peers partitions use blackhole routes, isolation uses link down (apt-get install nftables for silent bridge drops)")
		return nil
	}
	return n.applyNFT()
}

// Down kills every process left in the hosts and removes the faults, hosts
// and bridge. It is idempotent and best effort.
func (n *Net) Down() {
	for i := 1; i <= n.N; i++ {
		pids := n.Pids(i)
		for _, sig := range []string{"-CONT", "-KILL"} { // a stopped process ignores TERM until continued
			if len(pids) > 0 {
				_ = run("kill", append([]string{sig}, pids...)...)
			}
		}
	}
	if n.nft {
		_ = run("nft", "delete", "table", "bridge", n.table())
	}
	// Delete the veth pairs explicitly: that is synchronous, whereas a
	// deleted namespace's pair goes away asynchronously.
	for i := 1; i <= n.N; i++ {
		_ = run("ip", "link", "del", n.veth(i))
		_ = run("ip", "netns", "del", n.ns(i))
	}
	_ = run("ip", "link", "del", n.bridge())
}

// Pids lists the processes living in host i.
func (n *Net) Pids(i int) []string {
	out, err := exec.Command("ip", "netns", "pids", n.ns(i)).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// Command runs name in host i. ip netns exec execs the command, so the
// returned command's process id is the program's own.
func (n *Net) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.ns(i), name}, args...)...)
}

// CutPeers drops all traffic between host i and the other hosts; host i
// still reaches the bridge address (PostgreSQL).
func (n *Net) CutPeers(i int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.peers[i] = true
	if n.nft {
		return n.applyNFT()
	}
	for j := 1; j <= n.N; j++ {
		if j == i {
			continue
		}
		if err := run("ip", "-n", n.ns(i), "route", "add", "blackhole", n.Addr(j)+"/32"); err != nil {
			return err
		}
		if err := run("ip", "-n", n.ns(j), "route", "add", "blackhole", n.Addr(i)+"/32"); err != nil {
			return err
		}
	}
	return nil
}

// Isolate drops all traffic of host i: peers, PostgreSQL and clients.
func (n *Net) Isolate(i int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nft {
		n.isoNFT[i] = true
		return n.applyNFT()
	}
	n.linkDn[i] = true
	return run("ip", "link", "set", n.veth(i), "down")
}

// Heal removes every fault of host i.
func (n *Net) Heal(i int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []string
	if n.peers[i] && !n.nft {
		for j := 1; j <= n.N; j++ {
			if j != i {
				_ = run("ip", "-n", n.ns(i), "route", "del", "blackhole", n.Addr(j)+"/32")
				_ = run("ip", "-n", n.ns(j), "route", "del", "blackhole", n.Addr(i)+"/32")
			}
		}
	}
	if n.linkDn[i] {
		if err := run("ip", "link", "set", n.veth(i), "up"); err != nil {
			errs = append(errs, err.Error())
		}
		// Neighbour entries left INCOMPLETE during the cut lose the first
		// packets after the heal until they expire: flush them.
		_ = run("ip", "-n", n.ns(i), "neigh", "flush", "dev", "eth0")
		_ = run("ip", "neigh", "flush", "dev", n.bridge())
	}
	delete(n.peers, i)
	delete(n.isoNFT, i)
	delete(n.linkDn, i)
	if n.nft {
		if err := n.applyNFT(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal host %d: %s", i, strings.Join(errs, "; "))
	}
	return nil
}

// HealAll removes every fault.
func (n *Net) HealAll() error {
	var errs []string
	for i := 1; i <= n.N; i++ {
		if err := n.Heal(i); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// applyNFT regenerates the fault table atomically. Chains: forward = host
// to host, input = host to the bridge address, output = the bridge address
// to a host. ARP always passes, so drops are silent and healing is instant.
// Callers hold n.mu (or are Up).
func (n *Net) applyNFT() error {
	var fwd, in, out []string
	hosts := func(m map[int]bool) []int {
		var hs []int
		for h := range m {
			hs = append(hs, h)
		}
		sort.Ints(hs)
		return hs
	}
	for _, h := range hosts(n.peers) {
		fwd = append(fwd,
			fmt.Sprintf("ether type != arp iifname %q drop", n.veth(h)),
			fmt.Sprintf("ether type != arp oifname %q drop", n.veth(h)))
	}
	for _, h := range hosts(n.isoNFT) {
		fwd = append(fwd,
			fmt.Sprintf("ether type != arp iifname %q drop", n.veth(h)),
			fmt.Sprintf("ether type != arp oifname %q drop", n.veth(h)))
		in = append(in, fmt.Sprintf("ether type != arp iifname %q drop", n.veth(h)))
		out = append(out, fmt.Sprintf("ether type != arp oifname %q drop", n.veth(h)))
	}
	chain := func(name, hook string, rules []string) string {
		return fmt.Sprintf("  chain %s { type filter hook %s priority 0; policy accept;\n    %s\n  }\n",
			name, hook, strings.Join(rules, "\n    "))
	}
	script := fmt.Sprintf("table bridge %[1]s\ndelete table bridge %[1]s\ntable bridge %[1]s {\n%s%s%s}\n",
		n.table(), chain("fwd_f", "forward", fwd), chain("in_f", "input", in), chain("out_f", "output", out))
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %w: %s\n%s", err, out, script)
	}
	return nil
}
