package httpapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"
)

// The route table (route_table.go) declares every route once: its method and path, the
// handler, who may call it (access and scope), whether and how a change through it is
// audited, and its OpenAPI operation. The gin routes (New), the scope table (scopeOf,
// RouteScopes) and the OpenAPI paths (buildOpenAPI) are all made from it, so they cannot
// drift; TestRouteTable checks the table itself.
//
// Adding a route is one row in route_table.go (and its handler).

// access is the edge's check before a route's own middleware and handler.
type access int

const (
	// accessOpen routes are checked by nobody at the edge: public routes, and the Client
	// API and the sockets, which authenticate in their own middleware or handler.
	accessOpen access = iota
	// accessOwner routes take a session, the account key or a scoped key (requireOwner,
	// which checks the scope).
	accessOwner
	// accessAdmin routes are owner routes for accounts with the admin role.
	accessAdmin
)

// AuditAction says whether and how a change through a route is audited.
type AuditAction string

const (
	// AuditNone: the route is not audited (reads, public and Client API routes).
	AuditNone AuditAction = "none"
	// AuditCreate: the route creates a record (its id is the answer's).
	AuditCreate AuditAction = "create"
	// AuditUpdate: the body's members replace the record's; before and after are
	// recorded.
	AuditUpdate AuditAction = "update"
	// AuditDelete: the route deletes a record, or records.
	AuditDelete AuditAction = "delete"
	// AuditCommand: an action on the record that is not a member change (a regenerated
	// secret, ended sessions, a message sent to sockets); recorded without before/after.
	AuditCommand AuditAction = "command"
)

// Audit is a route's audit policy: the audit middleware reads it by the route's method and
// FullPath (auditOf), nothing else of the table.
type Audit struct {
	Action AuditAction
	// Record names the kind of record changed (the entry's recordType): "users",
	// "licenses", "account", "api_keys", ...
	Record string
	// Bulk marks a route that changes many records in one request: its one entry holds
	// every changed record's before and after, keyed by record id (describeBulkChanges).
	Bulk bool
	// OneWrite marks a bulk route whose records are changed by one store call: its entry
	// is written with that call (storage.AuditOutbox). The other bulk routes change each
	// record in a call of its own (auditRow), which stores that record's part of the one
	// entry (storage.AuditParts), merged once the handler is done (audit_bulk.go).
	OneWrite bool
	// OfApp marks a route that changes the app's records as a whole with no record named
	// in its path (a logs purge, a bulk deletion of licenses): its entry names the app as
	// its record. Its store calls write it with the change (the purge's intent, the
	// deletions): the flag itself decides only the record.
	OfApp bool
}

// Audited reports whether changes through the route are recorded.
func (a Audit) Audited() bool { return a.Action != "" && a.Action != AuditNone }

var notAudited = Audit{Action: AuditNone}

func auditCreate(record string) Audit  { return Audit{Action: AuditCreate, Record: record} }
func auditUpdate(record string) Audit  { return Audit{Action: AuditUpdate, Record: record} }
func auditDelete(record string) Audit  { return Audit{Action: AuditDelete, Record: record} }
func auditCommand(record string) Audit { return Audit{Action: AuditCommand, Record: record} }

// auditPurge is the policy of a deletion of the app's records as a whole, with none
// named in the path (OfApp): a logs purge by age, a bulk deletion of licenses by ids or
// by filter.
func auditPurge(record string) Audit { return Audit{Action: AuditDelete, Record: record, OfApp: true} }

// methodUpdate declares a route served on PATCH and, as ROUTES.md allows, PUT with the
// same body: one row, two gin routes, two operations alike.
const methodUpdate = "PATCH|PUT"

// row is one declaration of the table: the columns every route has.
type row struct {
	method  string
	path    string
	scope   string
	audit   Audit
	handler gin.HandlerFunc
	op      operation
}

// section is a run of rows that share their access, their OpenAPI tag and their
// middleware (run after access and audit, before the handler).
type section struct {
	tag    string
	access access
	before []gin.HandlerFunc
	rows   []row
}

// route is a row with its section's columns, PATCH|PUT expanded.
type route struct {
	row
	tag    string
	access access
	before []gin.HandlerFunc
}

func (r route) key() string { return r.method + " " + r.path }

// expand flattens the sections into routes, in declaration order.
func expand(sections []section) []route {
	var out []route
	for _, s := range sections {
		for _, r := range s.rows {
			methods := []string{r.method}
			if r.method == methodUpdate {
				methods = []string{http.MethodPatch, http.MethodPut}
			}
			for _, m := range methods {
				rr := r
				rr.method = m
				out = append(out, route{row: rr, tag: s.tag, access: s.access, before: s.before})
			}
		}
	}
	return out
}

// routeIndex is the table by "METHOD /full/path", built once from the declarations with
// no handlers bound (scopes, audit policies and operations do not depend on them). It is
// read-only after package initialisation.
var routeIndex = indexRoutes(routeTable(&handlerSet{}))

type tableIndex struct {
	byKey  map[string]*route
	sorted []*route // by path, then method
}

func indexRoutes(routes []route) tableIndex {
	idx := tableIndex{byKey: make(map[string]*route, len(routes))}
	for i := range routes {
		r := &routes[i]
		if idx.byKey[r.key()] != nil {
			panic(fmt.Sprintf("httpapi: route %s declared twice", r.key()))
		}
		idx.byKey[r.key()] = r
		idx.sorted = append(idx.sorted, r)
	}
	sort.Slice(idx.sorted, func(i, j int) bool {
		if idx.sorted[i].path != idx.sorted[j].path {
			return idx.sorted[i].path < idx.sorted[j].path
		}
		return idx.sorted[i].method < idx.sorted[j].method
	})
	return idx
}

// scopeOf answers the scope of a route ("" and false when the table lacks it).
func scopeOf(method, fullPath string) (string, bool) {
	r := routeIndex.byKey[method+" "+fullPath]
	if r == nil {
		return "", false
	}
	return r.scope, true
}

// auditOf answers the audit policy of a route (not audited when the table lacks it).
func auditOf(method, fullPath string) Audit {
	if r := routeIndex.byKey[method+" "+fullPath]; r != nil {
		return r.audit
	}
	return notAudited
}

// RouteScope is one row of the scope table, for the documentation and the OpenAPI
// description.
type RouteScope struct{ Method, Path, Scope string }

// RouteScopes answers the scope table sorted by path and method.
func RouteScopes() []RouteScope {
	out := make([]RouteScope, 0, len(routeIndex.sorted))
	for _, r := range routeIndex.sorted {
		out = append(out, RouteScope{Method: r.method, Path: r.path, Scope: r.scope})
	}
	return out
}

// edge is what register puts before the routes' own middleware.
type edge struct {
	owner gin.HandlerFunc // requireOwner
	admin gin.HandlerFunc // requireAdmin
	audit gin.HandlerFunc // auditChanges
	// skip leaves a route out of this router (the metrics route when it has its own
	// listener).
	skip func(route) bool
}

// register adds the routes to the router: access, then the audit middleware on audited
// routes, then the section's middleware, then the handler.
func register(r *gin.Engine, routes []route, e edge) error {
	for _, rt := range routes {
		if e.skip != nil && e.skip(rt) {
			continue
		}
		if rt.handler == nil {
			return fmt.Errorf("httpapi: route %s has no handler", rt.key())
		}
		var chain []gin.HandlerFunc
		switch rt.access {
		case accessOwner:
			chain = append(chain, e.owner)
		case accessAdmin:
			chain = append(chain, e.owner, e.admin)
		}
		if rt.audit.Audited() {
			chain = append(chain, e.audit)
		}
		chain = append(chain, rt.before...)
		chain = append(chain, rt.handler)
		r.Handle(rt.method, rt.path, chain...)
	}
	return nil
}

// unscopedRoutes answers the routes of the router the scope table does not name.
func unscopedRoutes(routes gin.RoutesInfo) []string {
	var missing []string
	for _, r := range routes {
		if _, ok := scopeOf(r.Method, r.Path); !ok {
			missing = append(missing, r.Method+" "+r.Path)
		}
	}
	return missing
}

// errUnscoped is New's refusal of a router with routes outside the route table.
func errUnscoped(missing []string) error {
	return fmt.Errorf("httpapi: routes outside the route table (declare them in route_table.go): %s", strings.Join(missing, ", "))
}

// Routes answers the routes of a handler made by New (nil for any other handler).
func Routes(h http.Handler) gin.RoutesInfo {
	if e, ok := h.(*gin.Engine); ok {
		return e.Routes()
	}
	return nil
}
