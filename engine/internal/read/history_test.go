package read

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPageLength(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		totals []int64
		limit  int
		bytes  int64
		want   int
	}{
		{"Empty", nil, 10, 100, 0},
		{"AllFit", []int64{10, 20, 30}, 10, 100, 3},
		{"ByteBoundStops", []int64{40, 80, 120}, 10, 100, 2},
		{"ExactlyAtBound", []int64{50, 100, 150}, 10, 100, 2},
		{"FirstAloneOverBound", []int64{500, 600}, 10, 100, 1},
		{"LimitStops", []int64{1, 2, 3, 4}, 3, 100, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, pageLength(c.totals, c.limit, c.bytes))
		})
	}
}
