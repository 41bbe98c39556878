package browsertest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
)

func encode(t *testing.T, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func TestNotBlank(t *testing.T) {
	white := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for y := range 100 {
		for x := range 200 {
			white.Set(x, y, color.White)
		}
	}
	page := image.NewRGBA(white.Bounds())
	copy(page.Pix, white.Pix)
	for y := 20; y < 60; y++ {
		for x := 10; x < 190; x++ {
			page.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y * 4), B: 90, A: 255})
		}
	}
	for _, c := range []struct {
		name  string
		img   image.Image
		blank bool
	}{
		{"White", white, true},
		{"OneDot", func() image.Image {
			i := image.NewRGBA(white.Bounds())
			copy(i.Pix, white.Pix)
			i.Set(5, 5, color.Black)
			return i
		}(), true},
		{"Page", page, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := NotBlank(encode(t, c.img))
			if c.blank {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
		})
	}
	require.Error(t, NotBlank([]byte("not a png")))
}

func TestUnavailable(t *testing.T) {
	for msg, want := range map[string]bool{
		"error: Failed to load resource: the server responded with a status of 503 (Service Unavailable)":   true,
		"error: Failed to load resource: the server responded with a status of 500 (Internal Server Error)": false,
		"error: Uncaught TypeError: x is undefined":                                                         false,
	} {
		require.Equal(t, want, unavailable(msg), msg)
	}
}
