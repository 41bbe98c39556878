package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// interactive are the roles of controls, which must have a name.
var interactive = map[string]bool{
	"button": true, "link": true, "textbox": true, "combobox": true, "checkbox": true, "radio": true,
	"searchbox": true, "spinbutton": true, "slider": true, "switch": true, "tab": true, "menuitem": true,
	"listbox": true, "progressbar": true, "search": true, "form": true, "dialog": true,
}

// Screenshot captures the whole page (PNG) into Shots/name.png (and the
// EnvShots directory when set) and fails the test if it is blank.
func (b *Browser) Screenshot(name string) []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, NotBlank(raw), "screenshot %s", name)
	dirs := []string{b.Shots}
	if d := os.Getenv(EnvShots); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		require.NoError(b.t, os.WriteFile(filepath.Join(d, name+".png"), raw, 0o644))
	}
	return raw
}

// NotBlank checks a PNG shows something: enough distinct colours and
// pixels that differ from its first one.
func NotBlank(raw []byte) error {
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("decode screenshot: %w", err)
	}
	colors, differ, total := distinct(img)
	if colors < 8 || differ*100 < total {
		return fmt.Errorf("screenshot is blank: %d colours, %d of %d pixels differ from the first", colors, differ, total)
	}
	return nil
}

func distinct(img image.Image) (colors, differ, total int) {
	r := img.Bounds()
	seen := map[uint32]bool{}
	fr, fg, fb, _ := img.At(r.Min.X, r.Min.Y).RGBA()
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			seen[(cr>>8)<<16|(cg>>8)<<8|cb>>8] = true
			if cr != fr || cg != fg || cb != fb {
				differ++
			}
			total++
		}
	}
	return len(seen), differ, total
}

// RequireNoHorizontalScroll fails the test if the page is wider than
// the viewport.
func (b *Browser) RequireNoHorizontalScroll(page string) {
	b.t.Helper()
	w := Eval[[]int](b, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`)
	require.LessOrEqual(b.t, w[0], w[1], "%s scrolls sideways: content %d px wide in a %d px viewport; widest: %s", page, w[0], w[1],
		Eval[string](b, widest))
}

// widest names the elements that stick out of the viewport (a hint).
const widest = `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).join(', ')`

// RequireAccessibleNames fails the test if a control in the page's
// accessibility tree has no accessible name.
func (b *Browser) RequireAccessibleNames(page string) int {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	tree, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (accessibility.GetFullAXTreeResult, error) {
		return cdp.Call(ctx, t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	})
	require.NoError(b.t, err)
	var unnamed []string
	controls := 0
	for _, n := range tree.Nodes {
		role := axString(n.Role)
		if n.Ignored || !interactive[role] {
			continue
		}
		controls++
		if strings.TrimSpace(axString(n.Name)) == "" {
			unnamed = append(unnamed, fmt.Sprintf("%s (backend node %d)", role, n.BackendDOMNodeID))
		}
	}
	require.Empty(b.t, unnamed, "%s: controls without an accessible name", page)
	return controls
}

func axString(v *accessibility.Value) string {
	if v == nil {
		return ""
	}
	s := strings.Trim(string(v.Value), `"`)
	return s
}
