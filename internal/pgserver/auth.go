package pgserver

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const (
	// PasswordFileName is the file in DataDir holding the superuser's
	// password. It is owned by this process's user and has mode 0600.
	PasswordFileName = "harvest-password"

	hbaFileName = "pg_hba.conf"

	passwordBytes   = 32 // 43 characters of base64url
	scramSaltBytes  = 16
	scramIterations = 4096 // PostgreSQL's scram_iterations default
)

// hbaConf is the whole pg_hba.conf of every server: each connection, over
// the unix socket or loopback TCP, must prove it knows the password.
const hbaConf = `# Written by Harvest (internal/pgserver) at every start: edits are replaced.
# Every client must present the password in ` + PasswordFileName + ` (scram-sha-256).
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256
host    all       all   ::1/128       scram-sha-256
`

// secureDataDir makes sure only the holder of the password file can
// connect: it creates the file on first use, sets the superuser's password
// to it and writes pg_hba.conf. It runs before every launch, so a data
// directory initialised with trust authentication (before Harvest used
// passwords) is upgraded in place, and a lost password file is replaced.
func (s *Server) secureDataDir(ctx context.Context) error {
	pw, err := loadOrCreatePassword(s.PasswordFile())
	if err != nil {
		return err
	}
	if err := s.setPassword(ctx, pw); err != nil {
		return err
	}
	if err := s.writeHBA(); err != nil {
		return err
	}
	s.password = pw
	return nil
}

// loadOrCreatePassword returns the password in path, first creating the
// file with a fresh random password when there is none.
func loadOrCreatePassword(path string) (string, error) {
	pw, err := readPassword(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return pw, err
	}
	if err := createPasswordFile(path); err != nil {
		return "", err
	}
	return readPassword(path)
}

// readPassword reads the password file, refusing a symlink, a file of
// another user, and a file others may read.
func readPassword(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", fmt.Errorf("open password file: %w", err)
	}
	defer f.Close()
	if err := checkPrivateFile(f); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return "", fmt.Errorf("read password file: %w", err)
	}
	pw := strings.TrimSpace(string(b))
	if pw == "" {
		return "", fmt.Errorf("password file %s: %w", path, ErrBadPasswordFile)
	}
	return pw, nil
}

func checkPrivateFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat password file: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("password file %s is not a regular file: %w", f.Name(), ErrBadPasswordFile)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("password file %s belongs to uid %d, not to this process's user: %w", f.Name(), st.Uid, ErrBadPasswordFile)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("password file %s has mode %v, want 0600: %w", f.Name(), fi.Mode().Perm(), ErrBadPasswordFile)
	}
	return nil
}

// createPasswordFile writes a random password to path with mode 0600. It
// never replaces an existing file: a concurrent creator wins.
func createPasswordFile(path string) error {
	b := make([]byte, passwordBytes)
	_, _ = rand.Read(b) // never fails
	tmp, err := writeTemp(filepath.Dir(path), base64.RawURLEncoding.EncodeToString(b)+"\n")
	if err != nil {
		return fmt.Errorf("create password file: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create password file: %w", err)
	}
	return nil
}

// writeTemp writes content to a new file of mode 0600 in dir and returns
// its name. The file is created exclusively, so it never follows a link.
func writeTemp(dir, content string) (string, error) {
	f, err := os.CreateTemp(dir, ".harvest-tmp-")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(content)
	err = errors.Join(err, f.Sync(), f.Close())
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// setPassword sets the superuser's password in single-user mode, before
// the server listens. PostgreSQL receives only the SCRAM verifier, so the
// password never reaches its log, not even in the statement of an error.
func (s *Server) setPassword(ctx context.Context, pw string) error {
	salt := make([]byte, scramSaltBytes)
	_, _ = rand.Read(salt) // never fails
	verifier, err := scramVerifier(pw, salt, scramIterations)
	if err != nil {
		return err
	}
	cmd := s.command(ctx, syscall.SIGKILL, "postgres", "--single", "-D", s.pgDataDir, "-c", "exit_on_error=on", superuser)
	cmd.Stdin = strings.NewReader("ALTER ROLE " + superuser + " PASSWORD '" + verifier + "'\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return &StartError{Err: fmt.Errorf("set postgres password (single-user mode): %w", err), LogTail: tail(out)}
	}
	return nil
}

// scramVerifier is the SCRAM-SHA-256 verifier PostgreSQL stores for pw
// (RFC 5802, RFC 7677), in the format of pg_authid.rolpassword.
func scramVerifier(pw string, salt []byte, iterations int) (string, error) {
	salted, err := pbkdf2.Key(sha256.New, pw, salt, iterations, sha256.Size)
	if err != nil {
		return "", fmt.Errorf("derive scram key: %w", err)
	}
	storedKey := sha256.Sum256(hmacSHA256(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt),
		b64(storedKey[:]), b64(hmacSHA256(salted, "Server Key"))), nil
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// writeHBA replaces pg_hba.conf with hbaConf. The new file is renamed over
// the old one, so a link planted in the data directory is replaced, not
// followed.
func (s *Server) writeHBA() error {
	tmp, err := writeTemp(s.dataDir, hbaConf)
	if err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	defer os.Remove(tmp)
	if err := s.acct.chown(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.dataDir, hbaFileName)); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	return nil
}
