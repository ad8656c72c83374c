package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// BenchmarkAuditedWrite compares an update through the edge with and without the audit
// middleware (body capture, the in-process read of the record before, the answer's values
// after, the queueing; the batched write to SQLite happens off the path). The handlers
// answer at once, so the difference is the whole cost the audit adds to a request.
func BenchmarkAuditedWrite(b *testing.B) {
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "k.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	svc := audit.New(store, audit.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer svc.Close()
	build := func(audited bool) *gin.Engine {
		e := gin.New()
		chain := []gin.HandlerFunc{func(c *gin.Context) {
			c.Set(ctxPrincipal, accounts.Principal{Account: storage.Account{ID: "acc", Username: "owner"}, TokenID: "tok"})
		}}
		if audited {
			chain = append(chain, auditChanges(svc, e))
		}
		g := e.Group("/api/apps/:appId", chain...)
		g.GET("/users/:userId", func(c *gin.Context) {
			ok(c, http.StatusOK, gin.H{"id": c.Param("userId"), "username": "alice", "level": 1, "email": "a@example.com"})
		})
		g.PATCH("/users/:userId", func(c *gin.Context) {
			var in map[string]any
			if !bind(c, &in) {
				return
			}
			ok(c, http.StatusOK, gin.H{"id": c.Param("userId"), "username": "alice", "level": in["level"], "email": "a@example.com"})
		})
		return e
	}
	for _, audited := range []bool{false, true} {
		name := "unaudited"
		if audited {
			name = "audited"
		}
		e := build(audited)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest("PATCH", "/api/apps/app-1/users/u-1", strings.NewReader(`{"level":5,"password":"secret-pw-1"}`))
				req.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				e.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
