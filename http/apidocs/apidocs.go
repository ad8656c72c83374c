// Package apidocs holds the browsable API reference served at /api/docs: a page and a
// script, embedded in the binary, that read /api/openapi.json. No request leaves the
// machine: no CDN, no font, no external script.
package apidocs

import _ "embed"

// Page is the HTML of /api/docs.
//
//go:embed index.html
var Page []byte

// Script renders the description; served at /api/docs/app.js.
//
//go:embed app.js
var Script []byte
