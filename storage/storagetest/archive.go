package storagetest

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// Populated names what PopulateEveryKind wrote.
type Populated struct {
	Account storage.Account
	App     storage.App
	Files   []storage.File
}

// PopulateEveryKind writes n records (at least one) of every record kind of the archive
// into s, with sealed secrets (a TOTP secret, an app signing key, an integration secret, a
// store connection's signing secret) when s was opened with a Sealer, every field set. The files' bytes are the caller's.
func PopulateEveryKind(t testing.TB, s storage.Store, n int) Populated {
	t.Helper()
	ctx := t.Context()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("populate %s: %v", what, err)
		}
	}
	acc := fullAccount(uniq("Every"))
	must("account", s.CreateAccount(ctx, acc))
	must("account token", s.CreateAccountToken(ctx, newToken(acc.ID, "reset")))
	must("api key", s.CreateAPIKey(ctx, apiKeyOf(acc.ID)))
	must("owner session", s.CreateOwnerSession(ctx, newOwnerSession(acc.ID)))
	must("recovery codes", s.ReplaceRecoveryCodes(ctx, acc.ID, codeHashes(max(n, 1)), ms(time.Minute)))
	for range max(n, 1) {
		pk := newPasskey(acc.ID)
		pk.LastUsedAt = ms(time.Hour)
		must("passkey", s.CreatePasskey(ctx, pk))
	}
	must("revocation", s.RevokeToken(ctx, uniq("jti-"), ms(time.Hour)))
	app := fullApp(acc.ID, uniq("every-app"))
	must("app", s.CreateApp(ctx, app))
	p := Populated{Account: acc, App: app}
	var users []storage.AppUser
	for i := range max(n, 1) {
		u := fullUser(app.ID, fmt.Sprintf("user%d-%s", i, uniq("")))
		must("user", s.CreateUser(ctx, u))
		users = append(users, u)
		l := fullLicense(app.ID, fmt.Sprintf("KEY-%d-%s", i, uniq("")))
		must("license", s.CreateLicenses(ctx, []storage.License{l}))
		must("device", s.CreateDevice(ctx, fullDevice(u, uniq("hwid-"))))
		must("app token", s.CreateTokens(ctx, []storage.Token{fullAppToken(app.ID, uniq("tok-"))}))
		must("variables", s.CreateVariables(ctx, []storage.Variable{
			fullVariable(app.ID, storage.ScopeApp, "", uniq("k")),
			fullVariable(app.ID, storage.ScopeUser, u.ID, uniq("k")),
			fullVariable(app.ID, storage.ScopeLicense, l.ID, uniq("k"))}))
		f := fullFile(app.ID, uniq("file"))
		must("file", s.CreateFile(ctx, f))
		p.Files = append(p.Files, f)
		must("rule", s.CreateRules(ctx, []storage.Rule{fullRule(app.ID, "ip", "block", uniq("203.0.113."))}))
		must("ws hook", s.CreateWSHook(ctx, fullWSHook(app.ID, uniq("hook"))))
		in := fullIntegration(app.ID, uniq("hook"))
		must("integration", s.CreateIntegration(ctx, in))
		d := fullDelivery(in, ms(time.Minute))
		done := fullDelivery(in, ms(-time.Minute))
		done.State = storage.DeliveryDelivered
		must("delivery", s.CreateDeliveries(ctx, []storage.Delivery{d, done})) // the queue's and the history's
		must("attempt", s.AddDeliveryAttempt(ctx, fullAttempt(d, 1, ms(0))))
		conn := fullStoreConnection(app.ID)
		must("store connection", s.CreateStoreConnection(ctx, conn))
		prod := storage.StoreProduct{ID: uniq("sp-"), AppID: app.ID, ConnectionID: conn.ID, ProductID: uniq("prod_"),
			VariantID: "price_1", Level: 3, Duration: 86400, MaxUses: 1, DeviceLimit: 2, MaxSeats: 4, KeyPrefix: "PRO",
			CreateUser: true, Variables: map[string]string{"tier": "pro"}, CreatedAt: ms(0), UpdatedAt: ms(time.Second)}
		_, err := s.PutStoreProduct(ctx, prod)
		must("store product", err)
		o := newOrder(app.ID, conn.ID, uniq("order_"))
		o.ProductRef, o.Status, o.Keys, o.Applied, o.Attempt = prod.ID, storage.OrderPaid, []string{l.Key}, []string{"renewal_1"}, 1
		o.PeriodEnd, o.PaidThrough, o.UpdatedAt = ms(48*time.Hour), ms(30*24*time.Hour), ms(time.Minute)
		must("order", s.CreateOrder(ctx, o))
		must("order event", s.AddOrderEvent(ctx, storage.OrderEvent{ID: uniq("oe-"), AppID: app.ID, ConnectionID: conn.ID,
			OrderRef: o.ID, EventID: uniq("evt_"), Type: "checkout.session.completed", Kind: "paid", Outcome: "issued 1 key",
			Payload: []byte(`{"id":"evt"}`), ReceivedAt: ms(time.Second)}))
		must("client session", s.SaveClientSessions(ctx, []storage.ClientSession{fullSession(app.ID, u.ID)}))
		must("log", s.InsertLogs(ctx, []storage.LogEntry{fullLog(app.ID, "user.login", "info", u.Username, ms(0))}))
		// A purge not finished, whose cutoff is before every entry (a node that opens the
		// restored data finishes it, and must not take the entries the comparison reads).
		must("log purge", s.BeginLogPurge(ctx, storage.LogPurge{ID: uniq("purge-"), AppID: app.ID, Days: 30, Before: ms(-time.Hour),
			AccountID: acc.ID, Actor: acc.Username, RequestID: uniq("req-"), CreatedAt: ms(0), TouchedAt: ms(time.Second)}))
		must("audit", s.AppendAudit(ctx, []storage.AuditEntry{auditEntry(acc.ID, app.ID, "owner", u.ID, ms(0))}))
		must("events", s.AppendEvents(ctx, []storage.EventRecord{newEvent(app.ID, "user.login", ms(0))}))
	}
	must("event cursor", s.SetEventCursor(ctx, "logs", 1))
	_ = users
	return p
}

// ArchiveHarness gives RunArchive an engine.
type ArchiveHarness struct {
	// Open returns a fresh, empty store of the engine, opened with sealer (nil: none).
	Open func(t *testing.T, sealer storage.Sealer) storage.Store
	// Tables answers the tables or collections the engine's database holds.
	Tables func(t *testing.T, s storage.Store) []string
}

// RunArchive checks an engine's storage.ArchiveStore: every kind reads back what was
// written, secrets sealed; the restore methods keep the audit chain, the event log's
// positions and recovery codes as they are (refused without their account); every table of the database is named by ArchiveTables (the every-table
// test: a new table fails it until it is a kind of the archive, or said why not).
func RunArchive(t *testing.T, h ArchiveHarness) {
	sealer := TestSealer(t)
	src := h.Open(t, sealer)
	PopulateEveryKind(t, src, 2)
	as := src.(storage.ArchiveStore)

	t.Run("EveryTableIsArchived", func(t *testing.T) {
		tables := as.ArchiveTables()
		for _, name := range h.Tables(t, src) {
			if _, ok := tables[name]; !ok {
				t.Errorf("table %s is not a kind of the archive: add it to storage/archive.go, the engine's archive.go and internal/backup's kinds (or say why it is not carried)", name)
			}
		}
	})

	records := map[string][]any{}
	for _, kind := range kindsOf(as) {
		if err := as.ArchiveRecords(t.Context(), kind, func(r any) error {
			records[kind] = append(records[kind], r)
			return nil
		}); err != nil {
			t.Fatalf("ArchiveRecords(%s): %v", kind, err)
		}
		if len(records[kind]) == 0 {
			t.Errorf("ArchiveRecords(%s): no records after PopulateEveryKind", kind)
		}
	}
	t.Run("SecretsStaySealed", func(t *testing.T) {
		for _, r := range records[storage.KindAccounts] {
			if a := r.(storage.Account); !storage.AccountSealed(sealer, a) {
				t.Errorf("account %s: TOTP secret archived in clear", a.ID)
			}
		}
		for _, r := range records[storage.KindApps] {
			if a := r.(storage.App); !sealer.Sealed(a.SigningKey) {
				t.Errorf("app %s: signing key archived in clear", a.ID)
			}
		}
		for _, r := range records[storage.KindIntegrations] {
			if i := r.(storage.Integration); !sealer.Sealed(i.Secret) {
				t.Errorf("integration %s: secret archived in clear", i.ID)
			}
		}
		for _, r := range records[storage.KindStoreConnections] {
			if c := r.(storage.StoreConnection); !sealer.Sealed(c.Secret) {
				t.Errorf("store connection %s: signing secret archived in clear", c.ID)
			}
		}
	})
	t.Run("RestoreKeepsChainAndPositions", func(t *testing.T) {
		dst := h.Open(t, nil).(storage.ArchiveStore)
		var audit []storage.AuditEntry
		for _, r := range records[storage.KindAudit] {
			audit = append(audit, r.(storage.AuditEntry))
		}
		var evs []storage.EventRecord
		for _, r := range records[storage.KindEvents] {
			evs = append(evs, r.(storage.EventRecord))
		}
		if err := dst.RestoreAudit(t.Context(), audit); err != nil {
			t.Fatalf("RestoreAudit: %v", err)
		}
		if err := dst.RestoreEvents(t.Context(), evs); err != nil {
			t.Fatalf("RestoreEvents: %v", err)
		}
		for _, kind := range []string{storage.KindAudit, storage.KindEvents} {
			var got []any
			if err := dst.ArchiveRecords(t.Context(), kind, func(r any) error { got = append(got, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if g, w := fmt.Sprint(got), fmt.Sprint(records[kind]); g != w {
				t.Errorf("%s after restore:\n got %s\nwant %s", kind, g, w)
			}
		}
		// Recovery codes go in as they are, and only beside their account.
		var codes []storage.RecoveryCode
		for _, r := range records[storage.KindRecoveryCodes] {
			codes = append(codes, r.(storage.RecoveryCode))
		}
		if err := dst.RestoreRecoveryCodes(t.Context(), codes); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("RestoreRecoveryCodes without their account: %v, want ErrNotFound", err)
		}
		for _, r := range records[storage.KindAccounts] {
			if err := dst.(storage.Store).CreateAccount(t.Context(), r.(storage.Account)); err != nil {
				t.Fatal(err)
			}
		}
		if err := dst.RestoreRecoveryCodes(t.Context(), codes); err != nil {
			t.Fatalf("RestoreRecoveryCodes: %v", err)
		}
		var got []any
		if err := dst.ArchiveRecords(t.Context(), storage.KindRecoveryCodes, func(r any) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if g, w := fmt.Sprint(got), fmt.Sprint(records[storage.KindRecoveryCodes]); g != w {
			t.Errorf("recovery codes after restore:\n got %s\nwant %s", g, w)
		}
		// The next append continues after what was restored.
		next := newEvent(evs[0].AppID, "user.login", ms(time.Second))
		batch := []storage.EventRecord{next}
		if err := dst.(storage.Store).AppendEvents(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; batch[0].Pos <= last.Pos {
			t.Errorf("append after restore got pos %d, the restored log ends at %d", batch[0].Pos, last.Pos)
		}
	})
}

// kindsOf answers the kinds an engine carries.
func kindsOf(as storage.ArchiveStore) []string {
	var out []string
	for _, kind := range as.ArchiveTables() {
		if kind != "" && kind[0] != '-' {
			out = append(out, kind)
		}
	}
	sort.Strings(out)
	return out
}

// OtherSealer is a Sealer with another key than TestSealer's: what it seals TestSealer
// cannot open, and the other way round.
func OtherSealer(t testing.TB) storage.Sealer { return box(t, "o") }
