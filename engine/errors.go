package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errOutboxGone: an outbox row was recorded (and deleted) by another
// attempt meanwhile; this attempt has nothing left to do.
var errOutboxGone = errors.New("outbox row already recorded")

// translate maps driver errors to engine errors at the boundary.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%s: %w", pgErr.ConstraintName, ErrDuplicate)
	}
	if errors.As(err, &pgErr) && pgErr.Code == "HR001" {
		return &assumptionError{what: strings.TrimPrefix(pgErr.Message, "expected ")}
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
