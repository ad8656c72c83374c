// Package httpapi (folder http) is Keyward's HTTP edge, built on gin: routing, request
// decoding and validation, the response envelopes, and the middleware every request passes
// (request ids, panic recovery, access logs, metrics, body limits, authentication, rate
// limits). It never talks to a database: handlers call the core services and turn their
// answers and errors into the wire format in one place (envelope.go).
//
// The package is named httpapi, not http, so that it does not shadow net/http in its own
// files or in its importers.
//
// Wire rules (SPEC 7, CLIENT-SDKS.md §3): every reply is JSON; success replies are
// {"success":true,"data":…} with success first and data always present and never null;
// errors are {"success":false,"error":{"code","message"}} for every status, 404 and 405
// included; JSON is written without HTML escaping.
package httpapi
