package pgserver

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// account is the OS user that runs initdb and postgres. cred is nil when this
// process is not root: the server then runs as this process's user.
type account struct {
	name     string
	uid, gid int
	cred     *syscall.Credential
}

func lookupAccount(name string) (account, error) {
	if os.Geteuid() != 0 {
		return account{name: "current user"}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, fmt.Errorf("look up user %q to run postgres as (postgres refuses to run as root): %w", name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return account{}, fmt.Errorf("user %q uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return account{}, fmt.Errorf("user %q gid %q: %w", name, u.Gid, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return account{name: name, uid: uid, gid: gid, cred: cred}, nil
}

// chown hands path to the account; a no-op when not root.
func (a account) chown(path string) error {
	if a.cred == nil {
		return nil
	}
	if err := os.Chown(path, a.uid, a.gid); err != nil {
		return fmt.Errorf("chown %s to %s: %w", path, a.name, err)
	}
	return nil
}

// sysProcAttr puts the child in its own process group, runs it as the
// account, and sends it sig when this process dies. Pdeathsig fires when the
// forking OS thread exits; Go keeps threads alive unless a goroutine exits
// while locked to one, which this package never does.
func (a account) sysProcAttr(sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig, Credential: a.cred}
}

// checkReachable fails with a clear message wrapping errUnreachable when the
// account cannot search every ancestor of dir: a root-owned 0700 home or
// temp directory is the usual culprit. It checks nothing when not root. The account runs without
// supplementary groups, so only its primary group counts.
func (a account) checkReachable(dir string) error {
	if a.cred == nil {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("check access to %s: %w", dir, err)
		}
		if !a.canSearch(fi) {
			return fmt.Errorf("user %s cannot reach %s: directory %s has mode %v (make it searchable, e.g. chmod o+x, or use another directory): %w",
				a.name, dir, d, fi.Mode().Perm(), errUnreachable)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func (a account) canSearch(fi os.FileInfo) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	switch {
	case int(st.Uid) == a.uid:
		return perm&0o100 != 0
	case int(st.Gid) == a.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
