package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// Options are what the pages need to know about the server.
type Options struct {
	// MailToFiles says mails are written as .eml files to the server's outbox folder (no
	// SMTP server is set, the embedded default): the sign-up and forgot-password pages say
	// so, without the folder's path, which only a signed-in owner is told (the account
	// page asks GET /api/auth/mail-outbox).
	MailToFiles bool
}

// ContentSecurityPolicy is sent with every page and asset. 'self' in connect-src admits the
// same host's ws:// and wss:// (CSP level 3), which the live pages use.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// pagePaths are the paths that answer with the page: the root and the links mails carry.
var pagePaths = map[string]bool{"/": true, "/verify-email": true, "/reset-password": true,
	"/confirm-email": true, "/cancel-email-change": true}

type asset struct {
	raw, gz []byte // gz is nil when compression does not pay
	ctype   string
	etag    string
}

// Pages answers the dashboard's pages and assets. The API's router hands it the requests
// no route of its own matches, after its middleware: every page and asset gets the request
// id and the access log line as API answers do.
type Pages struct {
	prefix string // "/ui/<version>/"
	assets map[string]asset
	page   asset
}

// embeddedAssets are the assets every Pages serves and the version in their paths, read
// and compressed once per process: they are the embedded files, the same for every Pages,
// and compressing them at gzip's best level took half the CPU of a server's start (the
// http tests start hundreds of servers in one process). Nothing changes them once built.
var embeddedAssets = sync.OnceValues(readAssets)

type assetSet struct {
	version string
	assets  map[string]asset
}

// readAssets reads and compresses the embedded assets (the page template aside).
func readAssets() (assetSet, error) {
	root, err := fs.Sub(static, "static")
	if err != nil {
		return assetSet{}, fmt.Errorf("web: %w", err)
	}
	files := map[string][]byte{}
	sum := sha256.New()
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "index.html" {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		files[p] = b
		fmt.Fprintf(sum, "%s\x00%d\x00", p, len(b))
		sum.Write(b)
		return nil
	})
	if err != nil {
		return assetSet{}, fmt.Errorf("web: read assets: %w", err)
	}
	set := assetSet{version: hex.EncodeToString(sum.Sum(nil))[:12], assets: make(map[string]asset, len(files))}
	for p, b := range files {
		a, err := newAsset(p, b)
		if err != nil {
			return assetSet{}, err
		}
		set.assets[p] = a
	}
	return set, nil
}

// New reads the embedded pages and assets.
func New(o Options) (*Pages, error) {
	root, err := fs.Sub(static, "static")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	set, err := embeddedAssets()
	if err != nil {
		return nil, err
	}
	h := &Pages{prefix: "/ui/" + set.version + "/", assets: set.assets}
	tmpl, err := template.ParseFS(root, "index.html")
	if err != nil {
		return nil, fmt.Errorf("web: page template: %w", err)
	}
	var page bytes.Buffer
	mail := ""
	if o.MailToFiles {
		mail = "outbox"
	}
	if err := tmpl.Execute(&page, struct{ Prefix, Mail string }{h.prefix, mail}); err != nil {
		return nil, fmt.Errorf("web: page template: %w", err)
	}
	if h.page, err = newAsset("index.html", page.Bytes()); err != nil {
		return nil, err
	}
	return h, nil
}

func newAsset(name string, b []byte) (asset, error) {
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // not left to the host's mime tables
	case ".js", ".mjs":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	sum := sha256.Sum256(b)
	a := asset{raw: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	if strings.HasPrefix(ctype, "text/") || ctype == "image/svg+xml" {
		var z bytes.Buffer
		w, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if err != nil {
			return asset{}, fmt.Errorf("web: gzip %s: %w", name, err)
		}
		_, _ = w.Write(b)
		if err := w.Close(); err != nil {
			return asset{}, fmt.Errorf("web: gzip %s: %w", name, err)
		}
		if z.Len() < len(b) {
			a.gz = z.Bytes()
		}
	}
	return a, nil
}

// Serve answers r when it asks for a page or an asset, and reports whether it did; the
// caller answers the rest.
func (h *Pages) Serve(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if pagePaths[r.URL.Path] {
		h.serve(w, r, h.page, "no-cache")
		return true
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, h.prefix); ok {
		if a, ok := h.assets[rest]; ok {
			h.serve(w, r, a, "public, max-age=31536000, immutable")
			return true
		}
	}
	return false
}

func (h *Pages) serve(w http.ResponseWriter, r *http.Request, a asset, cache string) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", cache)
	hd.Set("ETag", a.etag)
	hd.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", a.ctype)
	body := a.raw
	if a.gz != nil && acceptsGzip(r) {
		hd.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
