package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/sockets"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/analytics"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/files"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/logs"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/core/variables"
	"github.com/keyward/keyward/core/wshooks"
)

// routerOnly builds the router with services that are never called: only its routes are
// looked at.
func routerOnly(t testing.TB) *gin.Engine {
	t.Helper()
	eng := memory.New(memory.Config{})
	t.Cleanup(func() { _ = eng.Close() })
	h, err := New(Deps{Accounts: &accounts.Service{}, APIKeys: &apikeys.Service{}, Audit: &audit.Service{}, Apps: &apps.Service{}, Variables: &variables.Service{},
		Rules: &rules.Service{}, Logs: &logs.Service{}, Analytics: &analytics.Service{}, Files: &files.Service{},
		Integrations: &integrations.Service{}, Client: &client.Service{}, Realtime: &sockets.Service{}, WSHooks: &wshooks.Service{},
		Limiter: eng, Metrics: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Config{MetricsOnMain: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h.(*gin.Engine)
}

// TestUnscopedRouteRefused: a route added without a row makes New fail, and a scoped key
// is refused on it (fail closed).
func TestUnscopedRouteRefused(t *testing.T) {
	e := gin.New()
	e.GET("/api/new-thing", func(*gin.Context) {})
	if missing := unscopedRoutes(e.Routes()); len(missing) != 1 || missing[0] != "GET /api/new-thing" {
		t.Fatalf("missing = %v", missing)
	}
	k := &apikeys.Key{Grants: apikeys.NewGrants([]string{"full"})}
	if err := scopeDecision("GET", "/api/new-thing", "", k); err == nil {
		t.Fatal("a full key passed an unscoped route")
	}
}

// BenchmarkScopeCheck is the cost a scoped key adds to a request once authenticated:
// the table lookup, the grant and the app restriction.
func BenchmarkScopeCheck(b *testing.B) {
	k := &apikeys.Key{Grants: apikeys.NewGrants([]string{"users:read", "licenses:write", "files:create"})}
	k.Apps = []string{"app-1", "app-2"}
	b.Run("allowed", func(b *testing.B) {
		for b.Loop() {
			if err := scopeDecision("POST", "/api/apps/:appId/licenses", "app-2", k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("denied", func(b *testing.B) {
		for b.Loop() {
			if err := scopeDecision("DELETE", "/api/apps/:appId/users/:userId", "app-1", k); err == nil {
				b.Fatal("allowed")
			}
		}
	})
	b.Run("grants+check", func(b *testing.B) {
		for b.Loop() {
			g := apikeys.NewGrants([]string{"users:read", "licenses:write", "files:create"})
			kk := apikeys.Key{Grants: g}
			if err := scopeDecision("GET", "/api/apps/:appId/users", "x", &kk); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Through gin: the middleware on a real router and request.
	b.Run("middleware", func(b *testing.B) {
		e := gin.New()
		e.Use(func(c *gin.Context) {
			c.Set(ctxAPIKey, k)
			if err := checkScope(c); err != nil {
				fail(c, err)
				return
			}
			c.Next()
		})
		e.POST("/api/apps/:appId/licenses", func(c *gin.Context) { c.Status(204) })
		req := httptest.NewRequest("POST", "/api/apps/app-1/licenses", nil)
		for b.Loop() {
			w := httptest.NewRecorder()
			e.ServeHTTP(w, req)
			if w.Code != 204 {
				b.Fatal(w.Code)
			}
		}
	})
}

// TestScopeTableDocumented: docs/API.md lists every row of the scope table as
// "| `METHOD /path` | `scope` |", so the documentation stays true.
func TestScopeTableDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, r := range RouteScopes() {
		row := fmt.Sprintf("| `%s %s` | `%s` |", r.Method, r.Path, r.Scope)
		if !strings.Contains(string(doc), row) {
			missing = append(missing, row)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("docs/API.md lacks %d rows of the scope table, e.g.:\n%s", len(missing), strings.Join(missing[:min(len(missing), 200)], "\n"))
	}
}
