package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// refusingRecorder stores nothing: an entry it is asked to record is one the change's
// transaction did not take.
type refusingRecorder struct{ asked int }

func (r *refusingRecorder) Record(context.Context, storage.AuditEntry) error {
	r.asked++
	return errors.New("refused")
}

// TestAuditEntryGoesInTheChangesTransaction: on SQLite a change made through
// events.Change stores its audit entry in its own transaction (storage.AuditOutbox): the
// after-the-change recorder is never asked, the entry holds the members that changed and
// chains on, and a change whose updater fails stores no entry.
func TestAuditEntryGoesInTheChangesTransaction(t *testing.T) {
	ctx := t.Context()
	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	if err := store.CreateAccount(ctx, storage.Account{ID: "acc", Username: "owner", Email: "owner@example.org"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateApp(ctx, storage.App{ID: "a1", AccountID: "acc", Name: "One"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateUser(ctx, storage.AppUser{ID: "t1", AppID: "a1", Username: "alice", Level: 1}); err != nil {
		t.Fatal(err)
	}
	rec := &refusingRecorder{}
	refuse := false
	update := func(c *gin.Context) {
		octx, ch := events.Begin(c.Request.Context(), bus)
		u, err := store.UpdateUser(octx, "a1", "t1", audit.Track(c.Request.Context(), func(u *storage.AppUser) error {
			if refuse {
				return errors.New("refused by the updater")
			}
			u.Level++
			ch.Set(events.Event{Name: events.UserUpdate, AppID: "a1", Username: u.Username})
			return nil
		}))
		if err == nil {
			err = ch.Commit(c.Request.Context())
		}
		if err != nil {
			fail(c, err)
			return
		}
		ok(c, http.StatusOK, gin.H{"id": u.ID, "level": u.Level})
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := gin.New()
	e.Use(recovery(log))
	e.PATCH("/api/apps/:appId/users/:userId", func(c *gin.Context) {
		c.Set(ctxPrincipal, accounts.Principal{Account: storage.Account{ID: "acc", Username: "owner"}, TokenID: "tok"})
	}, auditChanges(rec, log), update)

	for range 2 {
		if w := patchThing(e); w.Code != http.StatusOK {
			t.Fatalf("update: %d %s", w.Code, w.Body)
		}
	}
	if rec.asked != 0 {
		t.Fatalf("the recorder was asked %d times; the entries should have gone with their changes", rec.asked)
	}
	list, _, err := store.ListAudit(ctx, storage.AuditQuery{AccountID: "acc"})
	if err != nil || len(list) != 2 {
		t.Fatalf("entries: %+v, %v; want 2", list, err)
	}
	if e := list[0]; e.Before != `{"level":2}` || e.After != `{"level":3}` || e.RecordID != "t1" || e.Status != http.StatusOK ||
		e.Route != "/api/apps/:appId/users/:userId" || e.ActorName != "owner" || e.Seq != 2 {
		t.Fatalf("newest entry %+v", e)
	}
	if r, err := audit.Verify(ctx, store); err != nil || !r.OK() || r.Entries != 2 {
		t.Fatalf("verify: %+v, %v", r, err)
	}

	refuse = true
	if w := patchThing(e); w.Code < 400 {
		t.Fatalf("a refused update answered %d", w.Code)
	}
	if _, n, _ := store.ListAudit(ctx, storage.AuditQuery{AccountID: "acc"}); n != 2 {
		t.Fatalf("a refused change left %d entries, want 2", n)
	}
	if rec.asked != 0 {
		t.Fatalf("a refused change asked the recorder")
	}
}
