package pgserver

import "errors"

var (
	// ErrNoBinaries reports that initdb or postgres could not be found.
	ErrNoBinaries = errors.New("no PostgreSQL binaries found: install postgresql " +
		"(apt-get install postgresql) or set pgserver.Config.BinDir to the directory holding initdb and postgres")

	// ErrBadPasswordFile reports a password file that is empty, not a
	// regular file, owned by another user, or readable by others.
	ErrBadPasswordFile = errors.New("unusable postgres password file")

	// errUnreachable reports that the run-as account cannot search a
	// directory on the way to the data or socket directory.
	errUnreachable = errors.New("directory not searchable by the postgres user")
)
