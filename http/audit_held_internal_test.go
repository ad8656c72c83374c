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

// heldEngine routes PATCH /api/apps/:appId/users/:userId (a route the table audits)
// through recovery and auditChanges on svc to h.
func heldEngine(svc *audit.Service, h gin.HandlerFunc) *gin.Engine {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := gin.New()
	e.Use(recovery(log))
	e.PATCH("/api/apps/:appId/users/:userId", func(c *gin.Context) {
		c.Set(ctxPrincipal, accounts.Principal{Account: storage.Account{ID: "acc", Username: "owner"}, TokenID: "tok"})
	}, auditChanges(svc, log), h)
	return e
}

func patchThing(e *gin.Engine) *httptest.ResponseRecorder {
	req := httptest.NewRequest("PATCH", "/api/apps/a1/users/t1", strings.NewReader(`{"level":2}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w
}

// TestAuditHoldsTheAnswerUntilStored: a change whose entry cannot be stored (the database
// is closed) is not acknowledged: the held answer is dropped for 503 UNAVAILABLE; a
// handler's panic still reaches the recovery middleware's answer.
func TestAuditHoldsTheAnswerUntilStored(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	svc := audit.New(store, audit.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer svc.Close()
	changed := func(c *gin.Context) {
		audit.Changed(c.Request.Context(), storage.AppUser{ID: "t1", Level: 1}, storage.AppUser{ID: "t1", Level: 2})
		ok(c, http.StatusOK, gin.H{"id": "t1", "level": 2})
	}
	e := heldEngine(svc, changed)
	if w := patchThing(e); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"level":2`) {
		t.Fatalf("stored: %d %s", w.Code, w.Body)
	}
	list, _, err := store.ListAudit(t.Context(), storage.AuditQuery{AccountID: "acc"})
	if err != nil || len(list) != 1 || list[0].Before != `{"level":1}` || list[0].After != `{"level":2}` {
		t.Fatalf("entry before the answer: %+v, %v", list, err)
	}

	panicking := heldEngine(svc, func(*gin.Context) { panic("handler bug") })
	if w := patchThing(panicking); w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), `"success":false`) {
		t.Fatalf("panic: %d %s", w.Code, w.Body)
	}

	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	w := patchThing(e)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "UNAVAILABLE") || strings.Contains(w.Body.String(), `"level"`) {
		t.Fatalf("not stored: %d %s", w.Code, w.Body)
	}
}
