package migrations

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		want    []int
		wantErr error
	}{
		{
			name: "sorted numerically, down files skipped",
			fsys: fstest.MapFS{
				"010_ten.up.sql":    file("SELECT 10"),
				"002_two.up.sql":    file("SELECT 2"),
				"002_two.down.sql":  file("SELECT -2"),
				"001_one.up.sql":    file("SELECT 1"),
				"1000_big.up.sql":   file("SELECT 1000"),
				"1000_big.down.sql": file(""),
			},
			want: []int{1, 2, 10, 1000},
		},
		{name: "bad name", fsys: fstest.MapFS{"1_x.up.sql": file("")}, wantErr: ErrBadFileName},
		{name: "not sql direction", fsys: fstest.MapFS{"001_x.sql": file("")}, wantErr: ErrBadFileName},
		{name: "version zero", fsys: fstest.MapFS{"000_x.up.sql": file("")}, wantErr: ErrBadFileName},
		{
			name:    "duplicate version",
			fsys:    fstest.MapFS{"001_a.up.sql": file(""), "001_b.up.sql": file("")},
			wantErr: ErrBadFileName,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := load(tt.fsys)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			got := make([]int, len(ms))
			for i, m := range ms {
				got[i] = m.Version
			}
			require.Equal(t, tt.want, got)
		})
	}
}
