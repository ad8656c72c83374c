package keyauthimport_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/internal/keyauthimport"
	"github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/storage"
)

// Facts of testdata/make-fixture.sh.
const (
	live = 2145916800 // a live subscription's expiry
	past = 1600000000
	made = 1700000000
)

func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/keyauth.sql")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImportKeyAuthDump imports the MariaDB dump into a running node on each engine pair,
// checks every mapping and the report, and signs a KeyAuth user in with its KeyAuth
// password: the stored bcrypt hash becomes argon2id and the next login still works.
func TestImportKeyAuthDump(t *testing.T) {
	testserver.Each(t, func(t *testing.T, e testserver.Engines) {
		srv := testserver.Start(t, e)
		ctx := t.Context()
		st := srv.Node.Core().Store
		acct, err := srv.Node.Accounts().CreateAccount(ctx, accounts.CreateInput{Username: "importer", Email: "importer@example.com",
			Password: "Import-Pass-1", Role: "user"})
		if err != nil {
			t.Fatal(err)
		}
		dump := fixture(t)
		now := func() time.Time { return time.Unix(made+86400*365, 0) }
		opt := keyauthimport.Options{AccountID: acct.ID, Now: now, BatchSize: 3}

		// Refused before anything is written: two KeyAuth owners, or a plan too small.
		if _, err := keyauthimport.Import(ctx, st, bytes.NewReader(dump), opt); err == nil || !strings.Contains(err.Error(), "--owner") {
			t.Fatalf("two owners without --owner: %v", err)
		}
		small := opt
		small.Owner, small.MaxApps, small.MaxUsersPerApp = "ann", 1, 15
		if _, err := keyauthimport.Import(ctx, st, bytes.NewReader(dump), small); err == nil || !strings.Contains(err.Error(), "plan allows 1") {
			t.Fatalf("a plan of one app: %v", err)
		}
		if list, _ := st.ListApps(ctx, acct.ID); len(list) != 0 {
			t.Fatalf("a refused import wrote %d apps", len(list))
		}

		opt.Owner = "ann"
		rep, err := keyauthimport.Import(ctx, st, bytes.NewReader(dump), opt)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"apps": 2, "users": 8, "licenses": 7, "subscriptions": 6, "variables": 3, "user variables": 2,
			"rules": 2, "integrations": 1}
		for k, n := range want {
			if rep.Mapped[k] != n {
				t.Errorf("mapped %s = %d, want %d (report %+v)", k, rep.Mapped[k], n, rep.Mapped)
			}
		}
		var out bytes.Buffer
		rep.Print(&out)
		for _, s := range []string{`app "Cheat Loader"`, `app "Tool's Pro"`, "new secret", "files (1 rows): KeyAuth files are links",
			"webhooks (1 rows)", "sessions (1 rows)", `SHA-1 digest`, `"x"`, `"o'neil"`, `"Gina"`, "user without a subscription",
			"not a Discord webhook URL", "the same key twice", `key mask "LOADER-******-******"`, "read-only in KeyAuth",
			"of a user not imported", "paused", "a ip ban Keyward cannot hold"} {
			if !strings.Contains(out.String(), s) {
				t.Errorf("the report lacks %q:\n%s", s, out.String())
			}
		}
		if t.Failed() {
			t.FailNow()
		}

		loader := rep.Apps[0]
		app, err := st.GetApp(ctx, acct.ID, loader.ID)
		if err != nil || app.Name != "Cheat Loader" || !app.LockHwid || !app.Enabled || app.Version != "1.0" {
			t.Fatalf("app: %+v, %v", app, err)
		}
		user := func(name string) storage.AppUser {
			u, err := st.GetUserByUsername(ctx, app.ID, name)
			if err != nil {
				t.Fatalf("user %s: %v", name, err)
			}
			return u
		}
		prem, err := st.GetLicenseByKey(ctx, app.ID, "LOADER-PREM01-XYZ789")
		if err != nil {
			t.Fatal(err)
		}
		if prem.Level != 5 || prem.UsedCount != 1 || prem.UsedBy != "alice" || prem.Duration != 2592000 || prem.MaxUses != 1 ||
			!prem.ActivatedAt.Equal(time.Unix(made+3600, 0)) || !prem.CreatedAt.Equal(time.Unix(made, 0)) {
			t.Fatalf("used key: %+v", prem)
		}
		if l, err := st.GetLicenseByKey(ctx, app.ID, "LOADER-BANNED-000001"); err != nil || !l.Banned || !strings.Contains(l.Note, "chargeback") {
			t.Fatalf("banned key: %+v, %v", l, err)
		}
		if l, err := st.GetLicenseByKey(ctx, app.ID, "loader-lower-case-key"); err != nil || l.UsedCount != 0 || l.Duration != 604800 {
			t.Fatalf("lower-case key: %+v, %v", l, err)
		}
		alice := user("alice")
		if alice.Level != 5 || !alice.ExpiresAt.Equal(time.Unix(live, 0)) || alice.LicenseID != prem.ID || alice.HWID != "HWID-ALICE-1" ||
			alice.Email != "" || alice.LastLoginIP != "203.0.113.7" || !strings.HasPrefix(alice.PasswordHash, "$2y$04$") ||
			!alice.CreatedAt.Equal(time.Unix(made, 0)) {
			t.Fatalf("alice: %+v", alice)
		}
		if bob := user("bob"); !bob.Banned || bob.BanReason != "caught speedhacking" || bob.Email != "bob@example.com" {
			t.Fatalf("bob: %+v", bob)
		}
		if dave := user("dave"); !dave.ExpiresAt.Equal(time.Unix(past, 0)) {
			t.Fatalf("dave (ended subscription): %+v", dave)
		}
		if erin := user("erin"); erin.ExpiresAt.IsZero() || erin.ExpiresAt.After(now()) {
			t.Fatalf("erin (no subscription) is not expired: %+v", erin)
		}
		if frank := user("frank"); frank.HWID != "" {
			t.Fatalf("frank's concatenated HWIDs were kept: %q", frank.HWID)
		}
		if v, err := st.GetVariableByKey(ctx, app.ID, storage.ScopeApp, "", "motd"); err != nil || v.Value != "Line one\nIt's \"quoted\" \\ with a backslash\ttab" {
			t.Fatalf("motd: %+v, %v", v, err)
		}
		if v, err := st.GetVariableByKey(ctx, app.ID, storage.ScopeUser, alice.ID, "theme"); err != nil || v.Value != "dark" {
			t.Fatalf("alice's theme: %+v, %v", v, err)
		}
		rs, err := st.ListRules(ctx, app.ID, storage.RuleQuery{})
		if err != nil || len(rs) != 2 {
			t.Fatalf("rules: %+v, %v", rs, err)
		}
		ints, err := st.ListIntegrations(ctx, app.ID)
		if err != nil || len(ints) != 1 || ints[0].Kind != "DISCORD" || ints[0].URL != "https://discord.com/api/webhooks/1111/tok-en_A" {
			t.Fatalf("integrations: %+v, %v", ints, err)
		}

		// A KeyAuth user signs in with its KeyAuth password; the hash becomes argon2id.
		calls := 0
		login := func(username, password, hwid string) testserver.Response {
			calls++ // init allows 5 calls per address in 5 minutes: each login comes from its own
			ip := fmt.Sprintf("198.18.0.%d", calls)
			init := srv.Do(t, testserver.Req{Method: "POST", Path: "/api/client/init", IP: ip, Body: map[string]string{"secret": loader.Secret, "version": "1.0", "hwid": hwid}})
			session, _ := init.Data()["sessionToken"].(string)
			if session == "" {
				t.Fatalf("init: %d %s", init.Status, init.Raw)
			}
			nonce, _ := srv.Do(t, testserver.Req{Method: "POST", Path: "/api/client/nonce", IP: ip, Body: map[string]string{"sessionToken": session}}).Data()["nonce"].(string)
			return srv.Do(t, testserver.Req{Method: "POST", Path: "/api/client/login", IP: ip, Header: map[string]string{"X-Nonce": nonce},
				Body: map[string]string{"sessionToken": session, "username": username, "password": password, "hwid": hwid}})
		}
		if r := login("alice", "alice-pass-2", "HWID-ALICE-1"); r.Status != 401 {
			t.Fatalf("a wrong password: %d %s", r.Status, r.Raw)
		}
		if h := user("alice").PasswordHash; h != alice.PasswordHash {
			t.Fatalf("a failed login changed the hash to %q", h)
		}
		for i := range 2 {
			r := login("alice", "alice-pass-1", "HWID-ALICE-1")
			if r.Status != 200 || r.Data()["username"] != "alice" || r.Data()["level"] != float64(5) {
				t.Fatalf("login %d with the KeyAuth password: %d %s", i+1, r.Status, r.Raw)
			}
			if h := user("alice").PasswordHash; !strings.HasPrefix(h, "$argon2id$") {
				t.Fatalf("after login %d the stored hash is %q, want argon2id", i+1, h)
			}
		}
		// frank's password has a quote and a backslash, as PHP hashed it.
		if r := login("frank", "frank's p\\ss 1", "any-hwid"); r.Status != 200 {
			t.Fatalf("frank: %d %s", r.Status, r.Raw)
		}
		if r := login("bob", "bob-pass-1", "h"); r.Status == 200 {
			t.Fatalf("a user banned in KeyAuth signed in: %s", r.Raw)
		}
		if r := login("dave", "dave-pass-1", "h"); r.Status == 200 {
			t.Fatalf("a user whose subscription ended signed in: %s", r.Raw)
		}
	})
}

// TestFailedImportLeavesNothing: a write that fails part-way deletes the apps the import
// created.
func TestFailedImportLeavesNothing(t *testing.T) {
	srv := testserver.Start(t, testserver.Pairs[0])
	ctx := t.Context()
	st := srv.Node.Core().Store
	acct, err := srv.Node.Accounts().CreateAccount(ctx, accounts.CreateInput{Username: "importer", Email: "importer@example.com",
		Password: "Import-Pass-1", Role: "user"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = keyauthimport.Import(ctx, failingRules{st}, bytes.NewReader(fixture(t)), keyauthimport.Options{AccountID: acct.ID, Owner: "ann"})
	if err == nil {
		t.Fatal("the import did not fail")
	}
	if list, _ := st.ListApps(ctx, acct.ID); len(list) != 0 {
		t.Fatalf("a failed import left %d apps", len(list))
	}
}

// failingRules is the real store whose rule writes fail, as a lost database would.
type failingRules struct{ storage.Store }

func (failingRules) CreateRules(context.Context, []storage.Rule) error { return storage.ErrUnavailable }
