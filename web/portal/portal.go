package portal

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
)

//go:embed index.html portal.js portal.css
var files embed.FS

// Asset is one embedded file with its content type.
type Asset struct {
	Body        []byte
	ContentType string
	// ETag is a hash of the body (the assets change only with the binary).
	ETag string
}

// ContentSecurityPolicy is the portal's policy: this origin's script, style and calls only.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// PageData fills the page: the app's id (in the assets' paths), its name, and the
// assets' version (a query that changes with them, so that they may be cached long).
type PageData struct {
	AppID, AppName, Version string
}

// Page parses the page's template (html/template escapes every value).
func Page() (*template.Template, error) { return template.ParseFS(files, "index.html") }

// Assets answers the page's script and stylesheet.
func Assets() (map[string]Asset, error) {
	out := map[string]Asset{}
	for name, ct := range map[string]string{"portal.js": "text/javascript; charset=utf-8", "portal.css": "text/css; charset=utf-8"} {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		h := sha256.Sum256(b)
		out[name] = Asset{Body: b, ContentType: ct, ETag: `"` + hex.EncodeToString(h[:8]) + `"`}
	}
	return out, nil
}
