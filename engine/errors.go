package engine

import (
	"errors"
)

// errOutboxGone: an outbox row was recorded (and deleted) by another
// attempt meanwhile; this attempt has nothing left to do.
var errOutboxGone = errors.New("outbox row already recorded")
