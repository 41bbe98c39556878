package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/harvestd/harvest/engine/shardapi"
)

// ErrExpectation: an expectation a one-trip batch queued did not hold
// (an *ExpectError); its transaction wrote nothing.
var ErrExpectation = errors.New("one-trip batch assumption")

// ExpectError is SQLSTATE HR001 (harvest_expect, raised by the
// statements QueueExpectNoneMoved, QueueExpectEpoch, QueueExpectTime and
// a one-trip batch's claims queue): What did not hold.
type ExpectError struct{ What string }

func (a *ExpectError) Error() string        { return "one-trip batch: expected " + a.What }
func (a *ExpectError) Is(target error) bool { return target == ErrExpectation }

// Translate maps driver errors to the shard's errors at the boundary:
// no row is shardapi.ErrNotFound, a unique violation
// shardapi.ErrDuplicate (naming the constraint), HR001 an *ExpectError,
// a failed connection shardapi.ErrUnavailable.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return shardapi.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%s: %w", pgErr.ConstraintName, shardapi.ErrDuplicate)
	}
	if errors.As(err, &pgErr) && pgErr.Code == "HR001" {
		return &ExpectError{What: strings.TrimPrefix(pgErr.Message, "expected ")}
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return fmt.Errorf("%w: %w", shardapi.ErrUnavailable, err)
	}
	return err
}
