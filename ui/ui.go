// Package ui is the web UI every node serves at /ui/: hand-written ES
// modules, HTML and CSS embedded in the binary, so `go build` alone makes
// a binary with the whole UI (no Node toolchain, no bundler, no
// third-party code).
//
// The page keeps the bearer token in memory only (no cookie, so no CSRF
// surface) and sends it as Authorization on every data call; it reads a
// run's event stream with fetch and a stream reader, since EventSource
// cannot send headers. Every answer carries ContentSecurityPolicy: no
// inline script, no other origin, no framing.
package ui

import (
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// ContentSecurityPolicy is sent with every asset: scripts and styles from
// this origin only (no inline script), data calls to this origin only,
// and the page may not be framed.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var embedded embed.FS

// assets is the embedded tree rooted at assets/.
var assets = mustSub(embedded, "assets")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// Handler serves the assets under prefix ("/ui/"): the prefix itself is
// index.html; an unknown name is a 404 with the API's JSON error body.
func Handler(prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, prefix)
		if name == "" {
			name = "index.html"
		}
		body, err := readAsset(name)
		if err != nil {
			notFound(w, r.URL.Path)
			return
		}
		setHeaders(w.Header(), name)
		_, _ = w.Write(body)
	})
}

// readAsset reads a file of the tree (never a directory).
func readAsset(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, fs.ErrNotExist
	}
	return fs.ReadFile(assets, name)
}

func setHeaders(h http.Header, name string) {
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

func notFound(w http.ResponseWriter, p string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": "no UI asset " + p, "code": "not_found"})
}
