package storagetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var deviceTests = []subtest{
	{"DeviceRoundTrip", testDeviceRoundTrip},
	{"DeviceConflict", testDeviceConflict},
	{"DeviceUnknownUser", testDeviceUnknownUser},
	{"DeviceList", testDeviceList},
	{"DeviceDelete", testDeviceDelete},
	{"DeviceWithinLimit", testDeviceWithinLimit},
	{"DeviceWithinLimitConcurrent", testDeviceWithinLimitConcurrent},
}

// testDeviceWithinLimit: CreateDeviceWithin inserts while the user's devices, and the
// bound hwid when no device has it, number fewer than the limit; otherwise ErrLimit and
// nothing written. Other users' devices do not count.
func testDeviceWithinLimit(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	alice := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	bob := mustCreateUser(t, s, fullUser(app.ID, "bob"))
	mustCreateDevice(t, s, fullDevice(bob, "B-1"))
	mustCreateDevice(t, s, fullDevice(bob, "B-2"))

	if err := s.CreateDeviceWithin(ctx, fullDevice(alice, "A-1"), 2, ""); err != nil {
		t.Fatalf("CreateDeviceWithin(first of 2): %v", err)
	}
	// The bound hwid has no device: it counts as one, so a second device passes the limit.
	if err := s.CreateDeviceWithin(ctx, fullDevice(alice, "A-2"), 2, "A-BOUND"); !errors.Is(err, storage.ErrLimit) {
		t.Fatalf("CreateDeviceWithin(past the bound hwid) = %v, want ErrLimit", err)
	}
	// The bound hwid is one of the devices: counted once.
	if err := s.CreateDeviceWithin(ctx, fullDevice(alice, "A-2"), 2, "A-1"); err != nil {
		t.Fatalf("CreateDeviceWithin(second of 2, bound to the first): %v", err)
	}
	if err := s.CreateDeviceWithin(ctx, fullDevice(alice, "A-3"), 2, "A-1"); !errors.Is(err, storage.ErrLimit) {
		t.Fatalf("CreateDeviceWithin(third of 2) = %v, want ErrLimit", err)
	}
	wantConflict(t, "CreateDeviceWithin of a hwid the user has", s.CreateDeviceWithin(ctx, fullDevice(alice, "A-1"), 5, ""))
	// At the limit, the user's own device again is that, not the limit (a second login of
	// a device that a concurrent one registered).
	wantConflict(t, "CreateDeviceWithin at the limit of a hwid the user has", s.CreateDeviceWithin(ctx, fullDevice(alice, "A-2"), 2, "A-1"))
	if _, total, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{UserID: alice.ID}); err != nil || total != 2 {
		t.Fatalf("alice's devices = (%d, %v), want 2: a refused device was written", total, err)
	}
	// A user deleted meanwhile (or never there): ErrNotFound, nothing written.
	ghost := storage.AppUser{ID: "no-such-user", AppID: app.ID, Username: "ghost"}
	if err := s.CreateDeviceWithin(ctx, fullDevice(ghost, "G-1"), 3, ""); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("CreateDeviceWithin for an unknown user = %v, want ErrNotFound", err)
	}
	if _, total, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{UserID: ghost.ID}); err != nil || total != 0 {
		t.Fatalf("devices of an unknown user = (%d, %v), want none", total, err)
	}
}

// testDeviceWithinLimitConcurrent: new devices of one user inserted at once, each within
// a limit, leave exactly the limit's number: the count and the insert are one step.
func testDeviceWithinLimitConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, fullUser(app.ID, "racer"))
	const limit, tries = 3, 12
	errs := make(chan error, tries)
	for i := range tries {
		go func() { errs <- s.CreateDeviceWithin(ctx, fullDevice(u, fmt.Sprintf("R-%d", i)), limit, "") }()
	}
	passed := 0
	for range tries {
		switch err := <-errs; {
		case err == nil:
			passed++
		case !errors.Is(err, storage.ErrLimit):
			t.Errorf("CreateDeviceWithin: %v, want nil or ErrLimit", err)
		}
	}
	if _, total, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{UserID: u.ID}); err != nil || total != limit || passed != limit {
		t.Fatalf("after %d concurrent inserts within %d: %d stored (%v), %d answered success; want %d", tries, limit, total, err, passed, limit)
	}
}

// newestFirst is the order of ListDevices and ListTokens.
func newestFirst[T any](rs []T, created func(T) time.Time) []T {
	return ordered(rs, func(a, b T) int { return created(a).Compare(created(b)) }, true)
}

func deviceCreated(d storage.Device) time.Time { return d.CreatedAt }

func testDeviceRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	full := mustCreateDevice(t, s, fullDevice(u, "HWID-FULL"))
	bare := mustCreateDevice(t, s, minimalDevice(u, "hwid-bare"))

	got, total, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{})
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	if total != 2 {
		t.Errorf("ListDevices total = %d, want 2", total)
	}
	wantSame(t, "ListDevices", []storage.Device{full, bare}, got) // the bare one's zero CreatedAt is oldest
	got, _, err = s.ListDevices(ctx, app.ID, storage.DeviceQuery{UserID: u.ID})
	if err != nil {
		t.Fatalf("ListDevices(user): %v", err)
	}
	wantSame(t, "ListDevices(user)", []storage.Device{full, bare}, got)
}

func testDeviceConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	app2 := mustCreateApp(t, s, fullApp("acc-1", "app2"))
	alice := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	bob := mustCreateUser(t, s, fullUser(app.ID, "bob"))
	carol := mustCreateUser(t, s, fullUser(app2.ID, "carol"))
	first := mustCreateDevice(t, s, fullDevice(alice, "HW-1"))

	sameID := fullDevice(bob, "HW-OTHER")
	sameID.ID = first.ID
	for name, d := range map[string]storage.Device{
		"the user's hwid again":      fullDevice(alice, "HW-1"),
		"the same id (another user)": sameID,
		"an identical device":        first,
	} {
		wantConflict(t, "CreateDevice with "+name, s.CreateDevice(ctx, d))
	}
	// The hwid is free for other users, in the same app or another one.
	mustCreateDevice(t, s, fullDevice(bob, "HW-1"))
	mustCreateDevice(t, s, fullDevice(carol, "HW-1"))

	for _, c := range []struct {
		user storage.AppUser
		n    int
	}{{alice, 1}, {bob, 1}, {carol, 1}} {
		if _, total, err := s.ListDevices(ctx, c.user.AppID, storage.DeviceQuery{UserID: c.user.ID}); err != nil || total != c.n {
			t.Errorf("devices of %s = (%d, %v), want %d", c.user.Username, total, err, c.n)
		}
	}
}

// testDeviceUnknownUser: a device must belong to an existing user of its app, so that none
// outlives the DeleteUser or DeleteApp that clears it.
func testDeviceUnknownUser(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	u := mustCreateUser(t, s, fullUser(app.ID, "alice"))

	unknownUser := fullDevice(storage.AppUser{ID: "no-such-user", AppID: app.ID, Username: "ghost"}, "HW-1")
	wrongApp := fullDevice(u, "HW-2")
	wrongApp.AppID = other.ID // alice is not a user of the other app
	unknownApp := fullDevice(u, "HW-3")
	unknownApp.AppID = "no-such-app"
	for name, d := range map[string]storage.Device{
		"an unknown user":             unknownUser,
		"a user of another app":       wrongApp,
		"an unknown app (user known)": unknownApp,
	} {
		wantNotFound(t, "CreateDevice for "+name, s.CreateDevice(ctx, d))
	}
	for _, appID := range []string{app.ID, other.ID, "no-such-app"} {
		if _, total, err := s.ListDevices(ctx, appID, storage.DeviceQuery{}); err != nil || total != 0 {
			t.Errorf("ListDevices(%s) after refused creates = (%d, %v), want 0", appID, total, err)
		}
	}
	// The refused ids and hwids are free for a good device.
	good := wrongApp
	good.AppID = app.ID
	mustCreateDevice(t, s, good)
}

func testDeviceList(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	alice := mustCreateUser(t, s, fullUser(app.ID, "Alice"))
	bob := mustCreateUser(t, s, fullUser(app.ID, "bob_the.builder"))
	stranger := mustCreateUser(t, s, fullUser(other.ID, "alice"))

	mk := func(u storage.AppUser, hwid string, age int) storage.Device {
		d := fullDevice(u, hwid)
		d.CreatedAt = ms(time.Duration(age) * time.Minute)
		return mustCreateDevice(t, s, d)
	}
	// Two devices share a creation time, so that the id tie-break shows.
	devs := []storage.Device{
		mk(alice, "AAAA-1111", 1),
		mk(alice, "BBBB-2222", 4),
		mk(bob, "CCCC-A.B", 2),
		mk(bob, "DDDD-AXB", 4),
		mk(bob, "EEEE-50%", 3),
	}
	mk(stranger, "AAAA-1111", 9) // another app's: never listed

	all := newestFirst(devs, deviceCreated)
	only := func(keep ...storage.Device) []storage.Device { return newestFirst(keep, deviceCreated) }
	cases := []struct {
		name string
		q    storage.DeviceQuery
		want []storage.Device
	}{
		{"all", storage.DeviceQuery{}, all},
		{"alice's", storage.DeviceQuery{UserID: alice.ID}, only(devs[0], devs[1])},
		{"bob's", storage.DeviceQuery{UserID: bob.ID}, only(devs[2], devs[3], devs[4])},
		{"another app's user", storage.DeviceQuery{UserID: stranger.ID}, nil},
		{"search hwid, any case", storage.DeviceQuery{Search: "aaaa"}, only(devs[0])},
		{"search username", storage.DeviceQuery{Search: "ALICE"}, only(devs[0], devs[1])},
		{"search '.' literally", storage.DeviceQuery{Search: "a.b"}, only(devs[2])},
		{"search '%' literally", storage.DeviceQuery{Search: "50%"}, only(devs[4])},
		{"search '_' literally", storage.DeviceQuery{Search: "b_t"}, only(devs[2], devs[3], devs[4])},
		{"search and user", storage.DeviceQuery{Search: "-", UserID: alice.ID}, only(devs[0], devs[1])},
		{"search with no match", storage.DeviceQuery{Search: "zzz"}, nil},
		{"page", storage.DeviceQuery{Page: storage.Page{Limit: 2, Offset: 1}}, window(all, 1, 2)},
		{"last page", storage.DeviceQuery{Page: storage.Page{Limit: 2, Offset: 4}}, window(all, 4, 2)},
		{"past the end", storage.DeviceQuery{Page: storage.Page{Limit: 2, Offset: 5}}, nil},
		{"user's second page", storage.DeviceQuery{UserID: bob.ID, Page: storage.Page{Limit: 2, Offset: 2}},
			window(only(devs[2], devs[3], devs[4]), 2, 2)},
	}
	totals := map[string]int{"page": 5, "last page": 5, "past the end": 5, "user's second page": 3}
	for _, c := range cases {
		got, total, err := s.ListDevices(ctx, app.ID, c.q)
		if err != nil {
			t.Fatalf("ListDevices(%s): %v", c.name, err)
		}
		wantTotal, ok := totals[c.name]
		if !ok {
			wantTotal = len(c.want)
		}
		if total != wantTotal {
			t.Errorf("ListDevices(%s) total = %d, want %d", c.name, total, wantTotal)
		}
		wantSame(t, "ListDevices("+c.name+")", c.want, got)
	}
}

func testDeviceDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	alice := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	bob := mustCreateUser(t, s, fullUser(app.ID, "bob"))
	var aliceDevs []storage.Device
	for i := range 3 {
		aliceDevs = append(aliceDevs, mustCreateDevice(t, s, fullDevice(alice, fmt.Sprintf("A-%d", i))))
	}
	bobDev := mustCreateDevice(t, s, fullDevice(bob, "B-0"))

	deleteDevice := func(appID, id string) error {
		_, err := s.DeleteDevice(ctx, appID, id)
		return err
	}
	wantNotFound(t, "DeleteDevice from another app", deleteDevice(other.ID, aliceDevs[0].ID))
	if n, err := s.DeleteUserDevices(ctx, other.ID, alice.ID); err != nil || n != 0 {
		t.Errorf("DeleteUserDevices from another app = (%d, %v), want 0", n, err)
	}
	// The removed device is answered as it was: its user and hwid unbind the user.
	gone, err := s.DeleteDevice(ctx, app.ID, aliceDevs[0].ID)
	if err != nil {
		t.Fatalf("DeleteDevice: %v", err)
	}
	if d := diff(aliceDevs[0], gone); d != "" {
		t.Errorf("DeleteDevice answered %s", d)
	}
	wantNotFound(t, "second DeleteDevice", deleteDevice(app.ID, aliceDevs[0].ID))
	wantNotFound(t, "DeleteDevice(missing)", deleteDevice(app.ID, "missing"))

	n, err := s.DeleteUserDevices(ctx, app.ID, alice.ID)
	if err != nil || n != 2 {
		t.Errorf("DeleteUserDevices = (%d, %v), want 2", n, err)
	}
	if n, err := s.DeleteUserDevices(ctx, app.ID, alice.ID); err != nil || n != 0 {
		t.Errorf("second DeleteUserDevices = (%d, %v), want 0", n, err)
	}
	got, _, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{})
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	wantSame(t, "devices left", []storage.Device{bobDev}, got)
	// The user stays; only the devices went, and the hwids are free again.
	wantUser(t, s, alice)
	mustCreateDevice(t, s, fullDevice(alice, "A-0"))
}
