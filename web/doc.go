// Package web is the owners' dashboard: a single page of plain ES modules and CSS, embedded
// in the binary with go:embed and served by every node at "/" (no front-end build chain:
// `go build` alone gives the whole product).
//
// The pages call only the public Dashboard REST API (/api/...) and the dashboard socket
// (/api/apps/:appId/ws/connect); there is no private API and no business rule in the browser
// that the API does not also enforce (the forms check types and bounds only to say so early).
//
// Pages answers what the API's router has no route for, after the router's middleware (the
// request id, the access log line, the metrics): GET and HEAD of "/", the mailed link paths
// "/verify-email" and "/reset-password", and the assets under "/ui/<version>/"; anything
// else gets the API's 404 envelope. The page says whether mails go to files, never the
// outbox folder's path: the account page asks the API for it once signed in.
//
// Assets are content-versioned (the version is a hash of every embedded file), so they are
// served with a year-long immutable cache and gzip-compressed once at start; the page itself
// is never cached. Every answer carries a strict Content-Security-Policy (scripts, styles,
// images and connections from this origin only; no inline script or style; no framing),
// X-Frame-Options: DENY and nosniff.
//
// The JWT lives in sessionStorage: it is readable only by scripts of this origin, and the
// CSP admits no script but this origin's own files (no inline script, no eval, no third
// party), while every owner-controlled string is rendered with textContent, never as HTML.
// It is gone when the tab closes, and a 401 from the API drops it.
//
// An app opens on its overview tab. Work on many records goes through the API's bulk and
// import routes (one request, per-row results), never one request per record. When the
// server cannot be reached a page says so in place (role="alert") with a Retry that loads
// it again without a reload, under the app's tabs (dom.js errorNotice); the Live page shows
// no one online while its socket is down and reconnects with a 1-30 s backoff.
//
// Vendored libraries (uPlot for charts, qrcode-generator for the 2FA QR code) are in
// static/vendor with their licences and a README saying how to update them.
package web
