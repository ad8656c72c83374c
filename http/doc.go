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
// Sockets (ws.go): the edge admits a client socket before it answers the upgrade, then
// hands the socket to a reader goroutine and returns. An idle socket holds one goroutine
// (its reader, waiting in a shallow peek so that its stack stays at 2 KiB; it goes on in
// a new goroutine after each frame it handles, pings and pongs included) and a 288-byte
// read buffer; the node pings its sockets from one timer per second of the ping period
// (pinger), not one per socket. Its writer (peer) writes a frame sent to an idle socket
// at once from the sender's goroutine when the socket takes it without blocking (no
// goroutine to wake: most of a broadcast's server CPU beside the write itself), and
// otherwise queues frames in a bounded queue allocated only while frames wait, written
// by a goroutine that runs only while there is something to write, and closes a reader
// too slow to keep up (1013). The edge encodes its data frames itself (a broadcast's once
// for all its sockets); gorilla/websocket writes the control frames. A panic while
// handling one message closes that socket alone (1011). RFC 6455 close codes are chosen
// here.
//
// Wire rules (SPEC 7, CLIENT-SDKS.md §3): every reply is JSON; success replies are
// {"success":true,"data":…} with success first and data always present and never null;
// errors are {"success":false,"error":{"code","message"}} for every status, 404 and 405
// included; JSON is written without HTML escaping.
package httpapi
