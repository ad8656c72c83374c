package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
)

// TestDiffRecordsChangedMembersAndRedactsByField: only members that differ are in the
// entry, named as the API names them; a secret field (tagged on the record) shows as
// redacted on both sides, whatever its name; bookkeeping (UpdatedAt) is left out.
func TestDiffRecordsChangedMembersAndRedactsByField(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	before := storage.AppUser{ID: "u1", Username: "alice", PasswordHash: "$argon2id$old", Level: 1, LockedIP: "", UpdatedAt: t0}
	after := before
	after.PasswordHash, after.Level, after.LockedIP, after.ExpiresAt, after.UpdatedAt = "$argon2id$new", 5, "203.0.113.9", t0.Add(time.Hour), t0.Add(time.Minute)
	b, a, err := audit.Diff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if b != `{"expiresAt":null,"level":1,"lockedIp":"","password":"[redacted]"}` ||
		a != `{"expiresAt":"2026-05-01T01:00:00Z","level":5,"lockedIp":"203.0.113.9","password":"[redacted]"}` {
		t.Fatalf("before %s\nafter  %s", b, a)
	}

	app := storage.App{ID: "a1", SecretHash: "h1", SecretLast6: "abcdef", SigningKey: "k1", AntiVM: false}
	next := app
	next.SecretHash, next.SecretLast6, next.SigningKey, next.AntiVM = "h2", "ghijkl", "k2", true
	b, a, err = audit.Diff(&app, &next)
	if err != nil {
		t.Fatal(err)
	}
	if b != `{"antiVM":false,"secret":"[redacted]","signingKey":"[redacted]"}` || a != `{"antiVM":true,"secret":"[redacted]","signingKey":"[redacted]"}` {
		t.Fatalf("app: before %s after %s", b, a)
	}

	hook := storage.WSHook{ID: "h1", Conditions: []byte(`[{"field":"type"}]`)}
	edited := hook
	edited.Conditions = []byte(`[]`)
	if b, a, err := audit.Diff(hook, edited); err != nil || b != `{"conditions":[{"field":"type"}]}` || a != `{"conditions":[]}` {
		t.Fatalf("hook: before %s after %s (%v)", b, a, err)
	}
	if b, a, err := audit.Diff(before, before); err != nil || b != `{}` || a != `{}` {
		t.Fatalf("no change: %s %s %v", b, a, err)
	}
	if _, _, err := audit.Diff(before, app); err == nil {
		t.Fatal("a diff of two record types answered no error")
	}
}

// TestTrackHandsOverTheLastRun: a store that runs the updater twice (a compare-and-swap
// retry) leaves one change, the last run's; without a collector Track changes nothing.
func TestTrackHandsOverTheLastRun(t *testing.T) {
	ctx, changes := audit.WithChanges(context.Background())
	fn := audit.Track(ctx, func(u *storage.AppUser) error { u.Level++; return nil })
	first := storage.AppUser{ID: "u1", Level: 1}
	_ = fn(&first)
	second := storage.AppUser{ID: "u1", Level: 3} // another writer changed it in between
	_ = fn(&second)
	list := changes.List()
	if len(list) != 1 || list[0].Before.(storage.AppUser).Level != 3 || list[0].After.(storage.AppUser).Level != 4 {
		t.Fatalf("changes: %+v", list)
	}
	plain := audit.Track(context.Background(), func(u *storage.AppUser) error { u.Level = 9; return nil })
	u := storage.AppUser{}
	if err := plain(&u); err != nil || u.Level != 9 {
		t.Fatalf("without a collector: %+v %v", u, err)
	}
}

// TestSecretFieldsAreTagged guards the redaction: every field of the audited records
// whose name says it holds a secret is tagged secret or left out. A new secret field
// without a tag fails here before it can reach an entry.
func TestSecretFieldsAreTagged(t *testing.T) {
	for _, rec := range []any{storage.Account{}, storage.App{}, storage.AppUser{}, storage.License{}, storage.Token{},
		storage.Variable{}, storage.Rule{}, storage.File{}, storage.Integration{}, storage.APIKey{}, storage.WSHook{},
		storage.StoreConnection{}, storage.StoreProduct{}, storage.Order{}, storage.Delivery{}} {
		for _, f := range audit.SecretLookingFields(rec) {
			t.Errorf("%T.%s looks secret but is not tagged audit:\",secret\" or audit:\"-\"", rec, f)
		}
	}
}

// TestSecretTagAloneRedacts: `audit:"secret"` (no comma) is the option, not a member name:
// store connections carried it, and their signing secret went in clear into entries.
func TestSecretTagAloneRedacts(t *testing.T) {
	type rec struct {
		Secret string `audit:"secret"`
		Name   string
	}
	_, after, err := audit.Diff(nil, rec{Secret: "whsec_clear", Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(after, "whsec_clear") || !strings.Contains(after, `"secret":"[redacted]"`) {
		t.Fatalf("after: %s", after)
	}
	conn := storage.StoreConnection{Secret: "whsec_clear", ReceiverID: "rcv_clear"}
	if _, after, err := audit.Diff(nil, conn); err != nil || strings.Contains(after, "_clear") {
		t.Fatalf("a store connection's creation: %s %v", after, err)
	}
}
