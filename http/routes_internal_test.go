package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/storage"
)

// TestRouteTable is the one test of the route table: the router serves exactly the
// table's routes, and every route has a scope, an operation and an audit decision. The
// scope table, the audit policies and the OpenAPI paths are read from the table, so the
// checks below are all that keeps them in step.
func TestRouteTable(t *testing.T) {
	table := routeIndex.sorted

	t.Run("the router serves the table", func(t *testing.T) {
		routes := routerOnly(t).Routes()
		if missing := unscopedRoutes(routes); len(missing) > 0 {
			t.Fatalf("routes outside the table: %v", missing)
		}
		seen := map[string]bool{}
		for _, r := range routes {
			seen[r.Method+" "+r.Path] = true
		}
		for _, r := range table {
			if !seen[r.key()] {
				t.Errorf("table row %q names no route", r.key())
			}
		}
		if len(routes) < 100 || len(routes) != len(table) {
			t.Errorf("%d routes walked, %d in the table; the router was not built whole", len(routes), len(table))
		}
	})

	t.Run("every route has a scope", func(t *testing.T) {
		grantable := scopeNames()
		for _, r := range table {
			switch r.scope {
			case scopePublic, scopeClient, scopeSession, apikeys.Credentials:
			default:
				if !slices.Contains(grantable, r.scope) {
					t.Errorf("%s: scope %q is neither a class nor a grantable scope", r.key(), r.scope)
				}
			}
			// Who may call it agrees with the scope: public and client routes take no owner
			// credentials, the others do (the sockets check theirs in the handler).
			open := r.scope == scopePublic || r.scope == scopeClient || r.scope == scopeSession
			if open != (r.access == accessOpen) {
				t.Errorf("%s: scope %q with access %d", r.key(), r.scope, r.access)
			}
		}
	})

	t.Run("every route has an operation", func(t *testing.T) {
		detailed := 0
		for _, r := range table {
			switch {
			case r.op.summary == "":
				t.Errorf("route %s has no summary", r.key())
			case r.tag == "":
				t.Errorf("route %s has no tag", r.key())
			case r.op.data == nil && r.op.raw == "" && r.op.sock == "":
				t.Errorf("route %s has no answer schema", r.key())
			default:
				detailed++
			}
		}
		t.Logf("%d of %d routes described in detail", detailed, len(table))
	})

	t.Run("every route has an audit decision", func(t *testing.T) {
		audited := 0
		for _, r := range table {
			a := r.audit
			switch a.Action {
			case AuditNone:
				// Every change an owner makes through the Dashboard and admin routes is
				// recorded (docs/API.md, Audit log): only reads are left out there.
				if r.access != accessOpen && r.method != http.MethodGet && !slices.Contains(sessionArtifactRoutes, r.key()) {
					t.Errorf("%s changes through an owner route and is not audited", r.key())
				}
				continue
			case AuditCreate, AuditUpdate, AuditDelete, AuditCommand:
			default:
				t.Errorf("%s: no audit decision (%q)", r.key(), a.Action)
				continue
			}
			audited++
			if r.access == accessOpen || r.method == http.MethodGet {
				t.Errorf("%s is audited but is a read or has no owner to record", r.key())
			}
			if (a.Action == AuditUpdate) != (r.method == http.MethodPatch || r.method == http.MethodPut) {
				t.Errorf("%s: %s; PATCH and PUT are the member updates", r.key(), a.Action)
			}
			// The record type is the resource of the route's scope (docs/API.md).
			want, _, _ := strings.Cut(r.scope, ":")
			switch {
			case strings.HasPrefix(r.path, "/api/auth/api-keys"):
				want = "api_keys"
			case want == "admin":
				want = "account"
			}
			if a.Record != want {
				t.Errorf("%s: audited as record %q, its scope names %q", r.key(), a.Record, want)
			}
		}
		if audited < 50 {
			t.Errorf("only %d audited routes", audited)
		}
		// A session artifact route exists, is an owner's POST and writes no entry.
		for _, key := range sessionArtifactRoutes {
			found := false
			for _, r := range table {
				if r.key() == key {
					found = r.access != accessOpen && r.method == http.MethodPost && !r.audit.Audited()
				}
			}
			if !found {
				t.Errorf("%s: not an unaudited owner POST of the table", key)
			}
		}
	})

	t.Run("the served description is the table", func(t *testing.T) {
		var spec struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(servedSpec(t), &spec); err != nil {
			t.Fatal(err)
		}
		described := map[string]bool{}
		for p, ops := range spec.Paths {
			for m := range ops {
				described[strings.ToUpper(m)+" "+p] = true
			}
		}
		routes := map[string]bool{}
		for _, r := range routerOnly(t).Routes() {
			key := r.Method + " " + openAPIPath(r.Path)
			routes[key] = true
			if !described[key] {
				t.Errorf("route %s is not described", key)
			}
		}
		for key := range described {
			if !routes[key] {
				t.Errorf("described operation %s is no route", key)
			}
		}
	})
}

// auditSink keeps the entries the audit middleware hands over.
type auditSink struct{ entries []storage.AuditEntry }

func (s *auditSink) Record(_ context.Context, e storage.AuditEntry) error {
	s.entries = append(s.entries, e)
	return nil
}

// TestAuditReadsTheTable: the audit middleware records what the route's row says, not
// what the method suggests: a POST the table does not audit is not recorded; a command and
// an update are, with the row's record type.
func TestAuditReadsTheTable(t *testing.T) {
	sink := &auditSink{}
	e := gin.New()
	g := e.Group("", func(c *gin.Context) {
		c.Set(ctxPrincipal, accounts.Principal{Account: storage.Account{ID: "acc", Username: "owner"}, TokenID: "tok"})
	}, auditChanges(sink, slog.New(slog.NewTextHandler(io.Discard, nil))))
	answer := func(c *gin.Context) { ok(c, http.StatusOK, gin.H{"id": "l-1", "note": "new"}) }
	g.POST("/api/apps/:appId/licenses/:licenseId/not-in-the-table", answer)
	g.POST("/api/apps/:appId/integrations/:integrationId/test", answer)
	g.PATCH("/api/apps/:appId/licenses/:licenseId", answer)
	for _, req := range []struct{ method, path string }{
		{"POST", "/api/apps/app-1/licenses/l-1/not-in-the-table"},
		{"POST", "/api/apps/app-1/integrations/i-1/test"},
		{"PATCH", "/api/apps/app-1/licenses/l-1"},
	} {
		r := httptest.NewRequest(req.method, req.path, strings.NewReader(`{"note":"new"}`))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", req.method, req.path, w.Code, w.Body)
		}
	}
	if len(sink.entries) != 2 {
		t.Fatalf("%d entries, want 2 (the route outside the table is not audited): %+v", len(sink.entries), sink.entries)
	}
	cmd, upd := sink.entries[0], sink.entries[1]
	if cmd.RecordType != "integrations" || cmd.RecordID != "i-1" || cmd.Method != "POST" {
		t.Errorf("command entry = %+v", cmd)
	}
	if upd.RecordType != "licenses" || upd.RecordID != "l-1" || upd.Method != "PATCH" {
		t.Errorf("update entry = %+v", upd)
	}
}
