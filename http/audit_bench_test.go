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
// middleware (the held answer, the diff of the records the handler hands over, and the
// write to SQLite the answer waits for: a group of one here, sequential requests). The
// handlers answer at once, so the difference is the whole cost the audit adds to a
// request.
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
			chain = append(chain, auditChanges(svc, slog.New(slog.NewTextHandler(io.Discard, nil))))
		}
		g := e.Group("/api/apps/:appId", chain...)
		g.GET("/users/:userId", func(c *gin.Context) {
			ok(c, http.StatusOK, gin.H{"id": c.Param("userId"), "username": "alice", "level": 1, "email": "a@example.com"})
		})
		g.PATCH("/users/:userId", func(c *gin.Context) {
			var in struct {
				Level    int    `json:"level"`
				Password string `json:"password"`
			}
			if !bind(c, &in) {
				return
			}
			before := storage.AppUser{ID: c.Param("userId"), Username: "alice", Level: 1, Email: "a@example.com", PasswordHash: "h1"}
			after := before
			after.Level, after.PasswordHash = in.Level, "h2"
			audit.Changed(c.Request.Context(), before, after)
			ok(c, http.StatusOK, gin.H{"id": after.ID, "username": after.Username, "level": after.Level, "email": after.Email})
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
