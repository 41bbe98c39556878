package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/admin"
)

// fakeCatalog is a catalog at an index, led here or not.
type fakeCatalog struct {
	leader bool
	index  uint64
}

func (f fakeCatalog) IsLeader() bool         { return f.leader }
func (f fakeCatalog) Catalog() admin.Catalog { return admin.Catalog{Index: f.index} }

func TestCatalogCurrent(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	stale := 15 * time.Second
	cases := []struct {
		name    string
		cat     fakeCatalog
		learned *uint64 // the leader's index, learned at now-age
		age     time.Duration
		want    bool
	}{
		{"Leader", fakeCatalog{leader: true}, nil, 0, true},
		{"FollowerThatNeverAsked", fakeCatalog{index: 9}, nil, 0, false},
		{"FollowerBehindTheLeader", fakeCatalog{index: 5}, ptr(uint64(7)), time.Second, false},
		{"FollowerCaughtUp", fakeCatalog{index: 7}, ptr(uint64(7)), time.Second, true},
		{"FollowerAhead", fakeCatalog{index: 8}, ptr(uint64(7)), time.Second, true},
		{"AnswerTooOld", fakeCatalog{index: 7}, ptr(uint64(7)), stale, false},
		{"RestartedFromASnapshot", fakeCatalog{index: 0}, ptr(uint64(7)), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			li := &leaderIndex{}
			if tc.learned != nil {
				li.record(*tc.learned, now.Add(-tc.age))
			}
			require.Equal(t, tc.want, li.current(tc.cat, now, stale))
		})
	}
}

func ptr[T any](v T) *T { return &v }
