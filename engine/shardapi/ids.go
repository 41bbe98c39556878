package shardapi

import (
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
)

// UnencodedShard is the shard prefix of ids that carry no shard.
const UnencodedShard = 0xFFFF

// NewExecutionID returns a random (version 4) UUID whose first two bytes
// are the shard id, big-endian: any node routes it without a lookup.
func NewExecutionID(shard uint16) uuid.UUID {
	id := uuid.New()
	binary.BigEndian.PutUint16(id[0:2], shard)
	return id
}

// ShardOf returns the shard an execution id was minted on.
func ShardOf(id uuid.UUID) uint16 { return binary.BigEndian.Uint16(id[0:2]) }

// ParseExecutionID parses a textual execution id.
func ParseExecutionID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("execution id %q: %w", s, ErrInvalidArgument)
	}
	return id, nil
}
