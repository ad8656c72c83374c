package storagetest

import (
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var loginTests = []subtest{
	{"LoginsRecorded", testLoginsRecorded},
	{"LoginsOlderSkipped", testLoginsOlderSkipped},
	{"LoginsSameUserTwice", testLoginsSameUserTwice},
	{"LoginsUnknownSkipped", testLoginsUnknownSkipped},
	{"LoginsEmpty", testLoginsEmpty},
	{"LoginsMillisecondPrecision", testLoginsMillisecondPrecision},
	{"LoginsRecordDevice", testLoginsRecordDevice},
}

// mustRecordLogins records the batch and fails the test at once if that does not work.
func mustRecordLogins(t *testing.T, s storage.Store, logins ...storage.UserLogin) {
	t.Helper()
	if err := s.RecordLogins(t.Context(), logins); err != nil {
		t.Fatalf("RecordLogins(%d logins): %v", len(logins), err)
	}
}

// loggedIn answers u as RecordLogins leaves it after a login from ip at at: the two
// last-login fields changed, every other one (UpdatedAt included) as it was.
func loggedIn(u storage.AppUser, ip string, at time.Time) storage.AppUser {
	u.LastLoginIP, u.LastLoginAt = ip, at
	return u
}

// testLoginsRecorded: one batch sets both fields of users of two apps, including one that
// never logged in (a zero LastLoginAt is before every login), and touches nothing else.
func testLoginsRecorded(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	app2 := mustCreateApp(t, s, fullApp("acc-1", "app2"))
	alice := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	bob := mustCreateUser(t, s, fullUser(app.ID, "bob"))
	carol := mustCreateUser(t, s, fullUser(app2.ID, "carol"))
	fresh := mustCreateUser(t, s, minimalUser(app2.ID, "fresh"))
	bystander := mustCreateUser(t, s, fullUser(app.ID, "bystander"))

	logins := []storage.UserLogin{
		{AppID: app.ID, UserID: alice.ID, IP: "192.0.2.1", At: ms(-time.Hour + 1*time.Millisecond)},
		{AppID: app.ID, UserID: bob.ID, IP: "2001:db8::2", At: ms(-30*time.Minute + 2*time.Millisecond)},
		{AppID: app2.ID, UserID: carol.ID, IP: "192.0.2.3", At: ms(3 * time.Millisecond)},
		{AppID: app2.ID, UserID: fresh.ID, IP: "192.0.2.4", At: ms(-10 * 24 * time.Hour)},
	}
	mustRecordLogins(t, s, logins...)

	want := []storage.AppUser{
		loggedIn(alice, logins[0].IP, logins[0].At),
		loggedIn(bob, logins[1].IP, logins[1].At),
		loggedIn(carol, logins[2].IP, logins[2].At),
		loggedIn(fresh, logins[3].IP, logins[3].At),
	}
	for _, u := range want {
		wantUser(t, s, u)
	}
	wantUser(t, s, bystander)

	// The sort on the last login follows the recorded times.
	list, _, err := s.ListUsers(ctx, app.ID, storage.UserQuery{SortBy: storage.UserSortLastLoginAt})
	if err != nil {
		t.Fatalf("ListUsers by last login: %v", err)
	}
	wantSame(t, "ListUsers by last login", []storage.AppUser{bystander, want[0], want[1]}, list)

	// An update afterwards starts from the recorded login and keeps it.
	next := want[0]
	next.Level = 99
	got, err := s.UpdateUser(ctx, app.ID, alice.ID, func(u *storage.AppUser) error {
		if d := diff(want[0], *u); d != "" {
			t.Errorf("UpdateUser after RecordLogins: fn got a record that differs: %s", d)
		}
		u.Level = 99
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateUser after RecordLogins: %v", err)
	}
	if d := diff(next, got); d != "" {
		t.Errorf("UpdateUser after RecordLogins differs: %s", d)
	}
	wantUser(t, s, next)

	// And a later batch moves the login on again.
	mustRecordLogins(t, s, storage.UserLogin{AppID: app.ID, UserID: alice.ID, IP: "192.0.2.9", At: ms(time.Hour)})
	wantUser(t, s, loggedIn(next, "192.0.2.9", ms(time.Hour)))
}

// testLoginsOlderSkipped: a login that is not later than the stored one changes nothing,
// whatever else is in the batch.
func testLoginsOlderSkipped(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	older := mustCreateUser(t, s, fullUser(app.ID, "older"))
	same := mustCreateUser(t, s, fullUser(app.ID, "same"))
	later := mustCreateUser(t, s, fullUser(app.ID, "later"))

	mustRecordLogins(t, s,
		storage.UserLogin{AppID: app.ID, UserID: older.ID, IP: "192.0.2.1", At: older.LastLoginAt.Add(-time.Millisecond)},
		storage.UserLogin{AppID: app.ID, UserID: older.ID, IP: "192.0.2.2", At: older.LastLoginAt.Add(-48 * time.Hour)},
		storage.UserLogin{AppID: app.ID, UserID: same.ID, IP: "192.0.2.3", At: same.LastLoginAt},
		storage.UserLogin{AppID: app.ID, UserID: later.ID, IP: "192.0.2.4", At: later.LastLoginAt.Add(time.Millisecond)},
	)
	wantUser(t, s, older)
	wantUser(t, s, same)
	wantUser(t, s, loggedIn(later, "192.0.2.4", later.LastLoginAt.Add(time.Millisecond)))

	// Once recorded, an older login than the new one is skipped too.
	mustRecordLogins(t, s, storage.UserLogin{AppID: app.ID, UserID: later.ID, IP: "192.0.2.5", At: later.LastLoginAt})
	wantUser(t, s, loggedIn(later, "192.0.2.4", later.LastLoginAt.Add(time.Millisecond)))

	// A zero time is after nothing, not even a user that never logged in.
	never := mustCreateUser(t, s, minimalUser(app.ID, "never"))
	mustRecordLogins(t, s, storage.UserLogin{AppID: app.ID, UserID: never.ID, IP: "192.0.2.6"})
	wantUser(t, s, never)
}

// testLoginsSameUserTwice: of several logins of one user in a batch the latest wins,
// wherever it stands in the batch.
func testLoginsSameUserTwice(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	first := mustCreateUser(t, s, fullUser(app.ID, "first"))
	last := mustCreateUser(t, s, fullUser(app.ID, "last"))
	middle := mustCreateUser(t, s, minimalUser(app.ID, "middle"))

	early, late := ms(10*time.Minute), ms(20*time.Minute+1*time.Millisecond)
	mustRecordLogins(t, s,
		storage.UserLogin{AppID: app.ID, UserID: first.ID, IP: "192.0.2.1", At: late},
		storage.UserLogin{AppID: app.ID, UserID: last.ID, IP: "192.0.2.2", At: early},
		storage.UserLogin{AppID: app.ID, UserID: middle.ID, IP: "192.0.2.3", At: early},
		storage.UserLogin{AppID: app.ID, UserID: first.ID, IP: "192.0.2.4", At: early},
		storage.UserLogin{AppID: app.ID, UserID: middle.ID, IP: "192.0.2.5", At: late},
		storage.UserLogin{AppID: app.ID, UserID: last.ID, IP: "192.0.2.6", At: late},
		storage.UserLogin{AppID: app.ID, UserID: middle.ID, IP: "192.0.2.7", At: early.Add(time.Millisecond)},
	)
	wantUser(t, s, loggedIn(first, "192.0.2.1", late))
	wantUser(t, s, loggedIn(last, "192.0.2.6", late))
	wantUser(t, s, loggedIn(middle, "192.0.2.5", late))
}

// testLoginsUnknownSkipped: a login of an unknown user, or of a user under another app's
// id, is skipped without error, creates nothing and touches no other user.
func testLoginsUnknownSkipped(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	u := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	bystander := mustCreateUser(t, s, fullUser(app.ID, "bystander"))
	otherUser := mustCreateUser(t, s, fullUser(other.ID, "elsewhere"))

	at := ms(time.Hour)
	unknown := []storage.UserLogin{
		{AppID: app.ID, UserID: "no-such-user", IP: "192.0.2.1", At: at},
		{AppID: other.ID, UserID: u.ID, IP: "192.0.2.2", At: at},
		{AppID: "no-such-app", UserID: u.ID, IP: "192.0.2.3", At: at},
		{AppID: app.ID, UserID: otherUser.ID, IP: "192.0.2.4", At: at},
	}
	mustRecordLogins(t, s, unknown...)
	for _, x := range []storage.AppUser{u, bystander, otherUser} {
		wantUser(t, s, x)
	}

	// Mixed with a known user's login, the unknown ones still do not stop it.
	mustRecordLogins(t, s, append(unknown, storage.UserLogin{AppID: app.ID, UserID: u.ID, IP: "192.0.2.5", At: at})...)
	wantUser(t, s, loggedIn(u, "192.0.2.5", at))
	wantUser(t, s, bystander)
	wantUser(t, s, otherUser)

	// Nothing was created under the ids of the skipped logins.
	_, err := s.GetUser(ctx, app.ID, "no-such-user")
	wantNotFound(t, "GetUser of an unknown user after RecordLogins", err)
	_, err = s.GetUser(ctx, other.ID, u.ID)
	wantNotFound(t, "GetUser from another app after RecordLogins", err)
	for appID, want := range map[string]int{app.ID: 2, other.ID: 1, "no-such-app": 0} {
		if n, err := s.CountUsers(ctx, appID); err != nil || n != want {
			t.Errorf("CountUsers(%q) after RecordLogins = (%d, %v), want %d", appID, n, err, want)
		}
	}
}

// testLoginsEmpty: an empty batch is a no-op, on an empty store as on a populated one.
func testLoginsEmpty(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if err := s.RecordLogins(ctx, nil); err != nil {
		t.Errorf("RecordLogins(nil) on an empty store: %v", err)
	}
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	if err := s.RecordLogins(ctx, nil); err != nil {
		t.Errorf("RecordLogins(nil): %v", err)
	}
	if err := s.RecordLogins(ctx, []storage.UserLogin{}); err != nil {
		t.Errorf("RecordLogins(empty): %v", err)
	}
	wantUser(t, s, u)
}

// testLoginsMillisecondPrecision: the login time is kept to the millisecond, in UTC, like
// every stored time, and compared at that precision.
func testLoginsMillisecondPrecision(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	v := mustCreateUser(t, s, fullUser(app.ID, "bob"))

	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	at := base.Add(time.Hour + 7*time.Millisecond + 654_321*time.Nanosecond).In(zone)
	// Within the stored login's millisecond: not later once truncated.
	sameMs := v.LastLoginAt.Add(999_999 * time.Nanosecond).In(zone)
	mustRecordLogins(t, s,
		storage.UserLogin{AppID: app.ID, UserID: u.ID, IP: "192.0.2.1", At: at},
		storage.UserLogin{AppID: app.ID, UserID: v.ID, IP: "192.0.2.2", At: sameMs},
	)
	wantUser(t, s, loggedIn(u, "192.0.2.1", storage.Truncate(at)))
	wantUser(t, s, v)

	// A later login in the same millisecond as the recorded one is not later either.
	mustRecordLogins(t, s, storage.UserLogin{AppID: app.ID, UserID: u.ID, IP: "192.0.2.3", At: at.Add(100 * time.Microsecond)})
	wantUser(t, s, loggedIn(u, "192.0.2.1", storage.Truncate(at)))
}

// testLoginsRecordDevice: a login that carries a hwid or a computer name sets it on the
// user; an empty one keeps what is stored; an older login sets neither.
func testLoginsRecordDevice(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	both := mustCreateUser(t, s, minimalUser(app.ID, "both"))
	hwidOnly := mustCreateUser(t, s, fullUser(app.ID, "hwidonly"))
	none := mustCreateUser(t, s, fullUser(app.ID, "none"))
	older := mustCreateUser(t, s, fullUser(app.ID, "older"))

	at := ms(time.Hour)
	mustRecordLogins(t, s,
		storage.UserLogin{AppID: app.ID, UserID: both.ID, IP: "192.0.2.1", HWID: "hw-1", PCName: "DESK-1", At: at},
		storage.UserLogin{AppID: app.ID, UserID: hwidOnly.ID, IP: "192.0.2.2", HWID: "hw-2", At: at},
		storage.UserLogin{AppID: app.ID, UserID: none.ID, IP: "192.0.2.3", At: at},
		storage.UserLogin{AppID: app.ID, UserID: older.ID, IP: "192.0.2.4", HWID: "hw-4", PCName: "DESK-4",
			At: older.LastLoginAt.Add(-time.Millisecond)},
	)
	want := loggedIn(both, "192.0.2.1", at)
	want.HWID, want.PCName = "hw-1", "DESK-1"
	wantUser(t, s, want)
	want = loggedIn(hwidOnly, "192.0.2.2", at)
	want.HWID = "hw-2"
	wantUser(t, s, want)
	wantUser(t, s, loggedIn(none, "192.0.2.3", at))
	wantUser(t, s, older)
}
