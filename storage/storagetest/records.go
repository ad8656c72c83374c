package storagetest

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// Fixtures and helpers of the application records. Every full* fixture sets each field to
// a distinct non-zero value (so a field an engine drops or swaps fails the round trip) and
// every minimal* one only what identifies the record, leaving zero values (times included)
// that must read back as such.

func fullApp(accountID, name string) storage.App {
	n := seq.Add(1)
	return storage.App{
		ID:              fmt.Sprintf("app-%05d", n),
		AccountID:       accountID,
		Name:            name,
		Description:     "Description of " + name,
		Version:         fmt.Sprintf("1.%d.3", n),
		Enabled:         true,
		Paused:          true,
		AntiDebug:       true,
		AntiVM:          true,
		LockHwid:        true,
		LockIP:          true,
		LockPcName:      true,
		SecretHash:      fmt.Sprintf("%064x", 0xabc000+n),
		SecretLast6:     fmt.Sprintf("%06d", n),
		SessionTimeout:  3600 + int(n),
		PlainFiles:      true,
		SigningKey:      fmt.Sprintf("c2VlZC1vZi1hcHAt%05d", n),
		SignResponses:   true,
		GraceSeconds:    600 + int(n),
		LicenseFileDays: 7,
		Portal:          storage.AppPortal{Enabled: true, PortalSwitches: storage.PortalSwitches{HWIDReset: true, Resend: true}},
		CreatedAt:       ms(-30 * 24 * time.Hour),
		UpdatedAt:       ms(-3*time.Hour + 7*time.Millisecond),
	}
}

func minimalApp(accountID, name string) storage.App {
	return storage.App{ID: uniq("app-min-"), AccountID: accountID, Name: name}
}

func fullUser(appID, username string) storage.AppUser {
	n := int(seq.Add(1))
	return storage.AppUser{
		ID:                fmt.Sprintf("user-%05d", n),
		AppID:             appID,
		Username:          username,
		PasswordHash:      "$argon2id$v=19$m=65536,t=3,p=2$c2FsdA$dXNlcg-" + username,
		Email:             username + "@Users.example",
		Level:             3 + n,
		ExpiresAt:         ms(365 * 24 * time.Hour),
		DeviceLimit:       2 + n,
		Metadata:          `{"plan":"gold","n":` + fmt.Sprint(n) + `}`,
		Enabled:           true,
		Banned:            true,
		BanReason:         "chargeback " + username,
		HWID:              "HWID-" + username,
		DisplayName:       "Display " + username,
		PCName:            "PC-" + username,
		LockedIP:          "203.0.113.7",
		LastLoginIP:       "198.51.100.9",
		HwidResetMax:      5,
		HwidResetCooldown: 3600,
		IPResetMax:        6,
		IPResetCooldown:   7200,
		HwidResets:        1,
		LastHwidResetAt:   ms(-5 * 24 * time.Hour),
		IPResets:          2,
		LastIPResetAt:     ms(-6*24*time.Hour + 3*time.Millisecond),
		LicenseID:         fmt.Sprintf("lic-of-%d", n),
		DiscordID:         fmt.Sprintf("%018d", n),
		LastLoginAt:       ms(-2*time.Hour + 5*time.Millisecond),
		CreatedAt:         ms(-20 * 24 * time.Hour),
		UpdatedAt:         ms(-time.Hour),
	}
}

func minimalUser(appID, username string) storage.AppUser {
	return storage.AppUser{ID: uniq("user-min-"), AppID: appID, Username: username}
}

func fullLicense(appID, key string) storage.License {
	n := int(seq.Add(1))
	return storage.License{
		ID:          fmt.Sprintf("lic-%05d", n),
		AppID:       appID,
		Key:         key,
		Level:       2 + n,
		MaxUses:     10 + n,
		UsedCount:   4,
		Duration:    30*24*3600 + int64(n),
		ExpiresAt:   ms(90 * 24 * time.Hour),
		Note:        "Note for " + key,
		UsedBy:      "User-" + key,
		DeviceLimit: 3,
		DisplayName: "Display " + key,
		Enabled:     true,
		Banned:      true,
		DiscordID:   fmt.Sprintf("%018d", n),
		MaxSeats:    5,
		ActivatedAt: ms(-24*time.Hour + 9*time.Millisecond),
		CreatedAt:   ms(-10 * 24 * time.Hour),
		UpdatedAt:   ms(-30 * time.Minute),
	}
}

func minimalLicense(appID, key string) storage.License {
	return storage.License{ID: uniq("lic-min-"), AppID: appID, Key: key}
}

func fullDevice(u storage.AppUser, hwid string) storage.Device {
	return storage.Device{
		ID:         uniq("dev-"),
		AppID:      u.AppID,
		UserID:     u.ID,
		Username:   u.Username,
		HWID:       hwid,
		PCName:     "PC-" + hwid,
		IP:         "192.0.2.44",
		CreatedAt:  ms(-4 * 24 * time.Hour),
		LastSeenAt: ms(-time.Minute + 11*time.Millisecond),
	}
}

func minimalDevice(u storage.AppUser, hwid string) storage.Device {
	return storage.Device{ID: uniq("dev-min-"), AppID: u.AppID, UserID: u.ID, HWID: hwid}
}

func fullAppToken(appID, value string) storage.Token {
	n := int(seq.Add(1))
	return storage.Token{
		ID:        fmt.Sprintf("tok-%05d", n),
		AppID:     appID,
		Value:     value,
		Level:     4 + n,
		MaxUses:   100 + n,
		UsedCount: 7,
		ExpiresAt: ms(48 * time.Hour),
		Note:      "note " + value,
		Enabled:   true,
		CreatedAt: ms(-6 * 24 * time.Hour),
		UpdatedAt: ms(-6 * time.Hour),
	}
}

func minimalAppToken(appID, value string) storage.Token {
	return storage.Token{ID: uniq("tok-min-"), AppID: appID, Value: value}
}

func mustCreateApp(t *testing.T, s storage.Store, a storage.App) storage.App {
	t.Helper()
	if err := s.CreateApp(t.Context(), a); err != nil {
		t.Fatalf("CreateApp(%q): %v", a.Name, err)
	}
	return a
}

func mustCreateUser(t *testing.T, s storage.Store, u storage.AppUser) storage.AppUser {
	t.Helper()
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("CreateUser(%q): %v", u.Username, err)
	}
	return u
}

func mustCreateLicenses(t *testing.T, s storage.Store, ls ...storage.License) []storage.License {
	t.Helper()
	if err := s.CreateLicenses(t.Context(), ls); err != nil {
		t.Fatalf("CreateLicenses(%d licenses): %v", len(ls), err)
	}
	return ls
}

func mustCreateDevice(t *testing.T, s storage.Store, d storage.Device) storage.Device {
	t.Helper()
	if err := s.CreateDevice(t.Context(), d); err != nil {
		t.Fatalf("CreateDevice(%q): %v", d.HWID, err)
	}
	return d
}

func mustCreateAppTokens(t *testing.T, s storage.Store, ts ...storage.Token) []storage.Token {
	t.Helper()
	if err := s.CreateTokens(t.Context(), ts); err != nil {
		t.Fatalf("CreateTokens(%d tokens): %v", len(ts), err)
	}
	return ts
}

func wantApp(t *testing.T, s storage.Store, want storage.App) {
	t.Helper()
	got, err := s.GetApp(t.Context(), want.AccountID, want.ID)
	if err != nil {
		t.Fatalf("GetApp(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetApp(%q) differs: %s", want.ID, d)
	}
}

func wantUser(t *testing.T, s storage.Store, want storage.AppUser) {
	t.Helper()
	got, err := s.GetUser(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetUser(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetUser(%q) differs: %s", want.ID, d)
	}
}

func wantLicense(t *testing.T, s storage.Store, want storage.License) {
	t.Helper()
	got, err := s.GetLicense(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetLicense(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetLicense(%q) differs: %s", want.ID, d)
	}
}

func wantAppToken(t *testing.T, s storage.Store, want storage.Token) {
	t.Helper()
	got, err := s.GetToken(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetToken(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetToken(%q) differs: %s", want.ID, d)
	}
}

// wantNotFound fails unless err is ErrNotFound.
func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("%s: error = %v, want ErrNotFound", what, err)
	}
}

// wantConflict fails unless err is ErrConflict.
func wantConflict(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrConflict) {
		t.Errorf("%s: error = %v, want ErrConflict", what, err)
	}
}

// wantSame fails unless got holds exactly the records of want, in order and field by field.
func wantSame[T any](t *testing.T, what string, want, got []T) {
	t.Helper()
	if !slices.Equal(recIDs(got), recIDs(want)) {
		t.Errorf("%s = %v, want %v", what, recIDs(got), recIDs(want))
		return
	}
	for i := range want {
		if d := diff(want[i], got[i]); d != "" {
			t.Errorf("%s: record %d (%s) differs: %s", what, i, recID(want[i]), d)
		}
	}
}

// recID answers the ID field of any record.
func recID(r any) string { return reflect.ValueOf(r).FieldByName("ID").String() }

func recIDs[T any](rs []T) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = recID(r)
	}
	return out
}

// ordered answers rs sorted by key, ties broken by id, the whole order reversed when desc:
// the order every list of the contract promises.
func ordered[T any](rs []T, key func(a, b T) int, desc bool) []T {
	out := slices.Clone(rs)
	slices.SortFunc(out, func(a, b T) int {
		return cmp.Or(key(a, b), strings.Compare(recID(a), recID(b)))
	})
	if desc {
		slices.Reverse(out)
	}
	return out
}

// window is the part of rs a page selects.
func window[T any](rs []T, offset, limit int) []T {
	if offset >= len(rs) {
		return nil
	}
	return rs[offset:min(offset+limit, len(rs))]
}

func ptr[T any](v T) *T { return &v }

// recordCounts is everything of an app the suite can count through the contract.
type recordCounts struct {
	Users, Licenses, Devices, Tokens int
}

func countRecords(t *testing.T, s storage.Store, appID string) recordCounts {
	t.Helper()
	ctx := t.Context()
	var c recordCounts
	var err error
	if c.Users, err = s.CountUsers(ctx, appID); err != nil {
		t.Fatalf("CountUsers: %v", err)
	}
	if c.Licenses, err = s.CountLicenses(ctx, appID); err != nil {
		t.Fatalf("CountLicenses: %v", err)
	}
	if _, c.Devices, err = s.ListDevices(ctx, appID, storage.DeviceQuery{}); err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	if _, c.Tokens, err = s.ListTokens(ctx, appID, storage.Page{}); err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	return c
}

// populated is an app with some records of every kind.
type populated struct {
	app      storage.App
	users    []storage.AppUser
	licenses []storage.License
	devices  []storage.Device
	tokens   []storage.Token
}

// populate creates an app of accountID with users (two devices each), licenses and
// tokens. Names, keys and values repeat across apps on purpose: they are unique per app.
func populate(t *testing.T, s storage.Store, accountID, name string, users, licenses, tokens int) populated {
	t.Helper()
	p := populated{app: mustCreateApp(t, s, fullApp(accountID, name))}
	for i := range users {
		u := mustCreateUser(t, s, fullUser(p.app.ID, fmt.Sprintf("user%d", i)))
		p.users = append(p.users, u)
		for j := range 2 {
			p.devices = append(p.devices, mustCreateDevice(t, s, fullDevice(u, fmt.Sprintf("HW-%d-%d", i, j))))
		}
	}
	for i := range licenses {
		p.licenses = append(p.licenses, fullLicense(p.app.ID, fmt.Sprintf("KEY-%04d", i)))
	}
	mustCreateLicenses(t, s, p.licenses...)
	for i := range tokens {
		p.tokens = append(p.tokens, fullAppToken(p.app.ID, fmt.Sprintf("token-%04d", i)))
	}
	mustCreateAppTokens(t, s, p.tokens...)
	return p
}

func (p populated) counts() recordCounts {
	return recordCounts{Users: len(p.users), Licenses: len(p.licenses), Devices: len(p.devices), Tokens: len(p.tokens)}
}

// raceUpdates runs workers concurrent calls of update at once and reports every error.
func raceUpdates(t *testing.T, workers int, update func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := make(chan struct{})
	for i := range workers {
		wg.Go(func() {
			<-start
			if err := update(i); err != nil {
				errs <- fmt.Errorf("updater %d: %w", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// timeCases are instants at the edges of millisecond precision, as in
// testAccountTimePrecision.
var timeCases = []time.Time{
	time.Date(2024, 1, 1, 0, 0, 0, 1_000_000, time.UTC),
	time.Date(2024, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
	time.Date(2199, 6, 15, 12, 0, 0, 7_000_000, time.UTC),
	time.Date(1999, 12, 31, 23, 59, 59, 500_000_000, time.UTC),
	storage.Truncate(time.Date(2025, 7, 1, 9, 30, 0, 123_456_789, time.FixedZone("X", 5*3600+1800))),
}
