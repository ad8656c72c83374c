// Package httpapi (folder http) is Keyward's HTTP edge, built on gin: routing, request
// decoding and validation, the response envelopes, and the middleware every request passes
// (request ids, panic recovery, access logs, metrics, body limits, authentication, rate
// limits). It never talks to a database: handlers call the core services and turn their
// answers and errors into the wire format in one place (envelope.go).
//
// Routes (route_table.go, routes.go): every route is declared once, as a row of the route
// table: method (update is PATCH and PUT), full path, scope, audit policy, handler and
// OpenAPI operation, in a section that gives its access (open, owner, admin), its OpenAPI
// tag and any middleware of its own. New registers the gin routes from the table; the scope
// check (scopeOf), the audit middleware (auditOf: the row's Audit, by method and FullPath)
// and the OpenAPI description (buildOpenAPI) read the same rows. Adding a route is one row
// and its handler; TestRouteTable fails when a row lacks a scope, an operation or an audit
// decision, or when the router serves a route the table does not declare (New refuses to
// build such a router too), and TestScopeTableDocumented when docs/API.md lacks its scope.
//
// The package is named httpapi, not http, so that it does not shadow net/http in its own
// files or in its importers.
//
// Sockets (ws.go): the handlers only authenticate and admit. A client socket is admitted
// before the upgrade is answered, then upgraded through transport/ws, whose Conn goes to
// the realtime wing's facade (actors/sockets; as wire.Peer, through socketPeer, which
// sends a wire.Disconnect's close code) and whose reader hands each message to it; a dashboard
// socket is refused before the upgrade with the envelope, as a REST call is. Everything
// on the wire (the upgrade's settings, the reader, the bounded writer queue, the pinger,
// the write-through, the close) is transport/ws's; an upgrade the transport refuses is
// answered with this package's error envelope (refusedUpgrade).
//
// EnvelopeListener (conn.go) rewrites the plain-text answers net/http writes by itself
// before routing, which no handler sees; sockets skip it once upgraded.
//
// Wire rules (SPEC 7, CLIENT-SDKS.md §3): every reply is JSON; success replies are
// {"success":true,"data":…} with success first and data always present and never null;
// errors are {"success":false,"error":{"code","message"}} for every status, 404 and 405
// included; JSON is written without HTML escaping.
package httpapi
