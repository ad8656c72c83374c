package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// atomicityTests race a write that an engine could make from a stale read against the
// changes it must never undo. FerretDB 1.x runs every update as a read of the whole
// document followed by a write of the whole document by _id, so any two writes of one
// document that are not serialised by the engine can lose one of them; these tests fail
// there unless the engine serialises them (see storage/mongo/ATOMICITY.md).
var atomicityTests = []subtest{
	{"AtomicLoginsKeepUserUpdates", testAtomicLoginsKeepUserUpdates},
	{"AtomicAPIKeyTouchKeepsUpdates", testAtomicAPIKeyTouchKeepsUpdates},
	{"AtomicOwnerSessionTouchKeepsAuth", testAtomicOwnerSessionTouchKeepsAuth},
	{"AtomicEventHeadAfterConcurrentAppends", testAtomicEventHeadAfterConcurrentAppends},
	{"AtomicDeleteWhereKeepsChanged", testAtomicDeleteWhereKeepsChanged},
	{"AtomicDeviceDeletedOnce", testAtomicDeviceDeletedOnce},
	{"AtomicOwnerSessionPurgeKeepsRefreshed", testAtomicOwnerSessionPurgeKeepsRefreshed},
}

// hammer runs fn in a loop on n goroutines until stop (or the test's end, when it failed
// before stop: its goroutines must not outlive the store); fn gets the goroutine and a
// call number unique across them.
type hammer struct {
	stopped atomic.Bool
	wg      sync.WaitGroup
	calls   []atomic.Int64 // completed calls, per goroutine
	next    atomic.Int64
	mu      sync.Mutex
	err     error
}

func startHammer(t *testing.T, n int, fn func(g int, call int64) error) *hammer {
	h := &hammer{calls: make([]atomic.Int64, n)}
	// Registered after the store's own cleanup, so run before it.
	t.Cleanup(func() {
		h.stopped.Store(true)
		h.wg.Wait()
	})
	for g := range n {
		h.wg.Go(func() {
			for !h.stopped.Load() {
				if err := fn(g, h.next.Add(1)); err != nil {
					h.mu.Lock()
					h.err = errors.Join(h.err, fmt.Errorf("hammer %d: %w", g, err))
					h.mu.Unlock()
					return
				}
				h.calls[g].Add(1)
			}
		})
	}
	return h
}

// settle waits until every goroutine has completed two more calls than now: a call that
// read the record before the caller's last write is then written too.
func (h *hammer) settle(t *testing.T) {
	t.Helper()
	want := make([]int64, len(h.calls))
	for g := range h.calls {
		want[g] = h.calls[g].Load() + 2
	}
	deadline := time.Now().Add(30 * time.Second)
	for g := range h.calls {
		for h.calls[g].Load() < want[g] {
			h.mu.Lock()
			err := h.err
			h.mu.Unlock()
			if err != nil {
				t.Fatalf("racing writer failed: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("racing writer %d made no progress in 30 s", g)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// stop ends the loops and reports a failure of any.
func (h *hammer) stop(t *testing.T) {
	t.Helper()
	h.stopped.Store(true)
	h.wg.Wait()
	if h.err != nil {
		t.Fatalf("racing writer failed: %v", h.err)
	}
}

// testAtomicLoginsKeepUserUpdates: RecordLogins racing UpdateUser never puts back what an
// acknowledged update wrote. Each update adds one to a counter, so a lost one shows in the
// final count; the contract lets an update put back an older login, not the reverse.
func testAtomicLoginsKeepUserUpdates(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, fullUser(app.ID, "racer"))
	bystander := mustCreateUser(t, s, fullUser(app.ID, "bystander"))
	const updates = 15
	h := startHammer(t, 2, func(g int, call int64) error {
		return s.RecordLogins(ctx, []storage.UserLogin{
			{AppID: app.ID, UserID: u.ID, IP: fmt.Sprintf("192.0.2.%d", g+1), At: ms(time.Duration(call) * time.Millisecond)},
			{AppID: app.ID, UserID: bystander.ID, IP: "192.0.2.9", At: ms(time.Duration(call) * time.Millisecond)},
		})
	})
	for i := range updates {
		if _, err := s.UpdateUser(ctx, app.ID, u.ID, func(x *storage.AppUser) error {
			x.HwidResets++
			x.DisplayName = fmt.Sprintf("update %d", i)
			return nil
		}); err != nil {
			h.stop(t)
			t.Fatalf("UpdateUser %d: %v", i, err)
		}
		h.settle(t)
		got, err := s.GetUser(ctx, app.ID, u.ID)
		if err != nil {
			h.stop(t)
			t.Fatalf("GetUser: %v", err)
		}
		if want := fmt.Sprintf("update %d", i); got.DisplayName != want || got.HwidResets != u.HwidResets+i+1 {
			h.stop(t)
			t.Fatalf("after update %d and racing logins: DisplayName %q, HwidResets %d; want %q, %d (an acknowledged update was undone)",
				i, got.DisplayName, got.HwidResets, want, u.HwidResets+i+1)
		}
	}
	h.stop(t)
	last := h.next.Load()
	got, err := s.GetUser(ctx, app.ID, bystander.ID)
	if err != nil || got.LastLoginAt.IsZero() || got.LastLoginAt.After(ms(time.Duration(last)*time.Millisecond)) {
		t.Errorf("bystander's last login = %v, %v; want one of the racing logins", got.LastLoginAt, err)
	}
}

// testAtomicAPIKeyTouchKeepsUpdates: TouchAPIKey (a key's use) racing UpdateAPIKey (the
// owner narrowing its scopes) never puts back the scopes the update replaced.
func testAtomicAPIKeyTouchKeepsUpdates(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := apiKeyAccount(t, s)
	k := apiKeyOf(a.ID)
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	const updates = 15
	h := startHammer(t, 2, func(g int, call int64) error {
		return s.TouchAPIKey(ctx, k.ID, ms(time.Duration(call)*time.Millisecond), fmt.Sprintf("198.51.100.%d", g+1))
	})
	for i := range updates {
		change := k
		change.Name = fmt.Sprintf("update %d", i)
		change.Scopes = []string{fmt.Sprintf("users:read%d", i)}
		if _, err := s.UpdateAPIKey(ctx, change); err != nil {
			h.stop(t)
			t.Fatalf("UpdateAPIKey %d: %v", i, err)
		}
		h.settle(t)
		got, err := s.GetAPIKey(ctx, a.ID, k.ID)
		if err != nil {
			h.stop(t)
			t.Fatalf("GetAPIKey: %v", err)
		}
		if got.Name != change.Name || len(got.Scopes) != 1 || got.Scopes[0] != change.Scopes[0] {
			h.stop(t)
			t.Fatalf("after update %d and racing touches: %q %v; want %q %v (an acknowledged update was undone)",
				i, got.Name, got.Scopes, change.Name, change.Scopes)
		}
	}
	h.stop(t)
	got, err := s.GetAPIKey(ctx, a.ID, k.ID)
	if err != nil || !got.LastUsedAt.After(k.LastUsedAt) {
		t.Errorf("last use = %v, %v; want one of the racing touches", got.LastUsedAt, err)
	}
}

// testAtomicOwnerSessionTouchKeepsAuth: a session's touch (its use recorded) racing a
// re-authentication never puts back the older AuthAt, which would ask the owner to prove
// who they are again right after it was acknowledged.
func testAtomicOwnerSessionTouchKeepsAuth(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("toucher"))
	o := mustCreateOwnerSession(t, s, newOwnerSession(a.ID))
	const updates = 15
	h := startHammer(t, 2, func(g int, call int64) error {
		return s.UpdateOwnerSession(ctx, o.ID, storage.OwnerSessionChange{
			LastUsedAt: ms(time.Duration(call) * time.Millisecond), IP: fmt.Sprintf("203.0.113.%d", g+1)})
	})
	for i := range updates {
		auth := ms(time.Duration(i+1) * time.Hour)
		if err := s.UpdateOwnerSession(ctx, o.ID, storage.OwnerSessionChange{AuthAt: auth, ExpiresAt: auth.Add(time.Hour)}); err != nil {
			h.stop(t)
			t.Fatalf("UpdateOwnerSession %d: %v", i, err)
		}
		h.settle(t)
		got, err := s.GetOwnerSession(ctx, o.ID)
		if err != nil {
			h.stop(t)
			t.Fatalf("GetOwnerSession: %v", err)
		}
		if !got.AuthAt.Equal(auth) || !got.ExpiresAt.Equal(auth.Add(time.Hour)) {
			h.stop(t)
			t.Fatalf("after re-authentication %d and racing touches: AuthAt %v, ExpiresAt %v; want %v, %v (an acknowledged change was undone)",
				i, got.AuthAt, got.ExpiresAt, auth, auth.Add(time.Hour))
		}
	}
	h.stop(t)
}

// testAtomicEventHeadAfterConcurrentAppends: once concurrent appends have all returned,
// the log's head is the last of them and every event can be read: a head that fell back
// (two raises racing) would hide acknowledged events from every consumer until the next
// append.
func testAtomicEventHeadAfterConcurrentAppends(t *testing.T, s storage.Store) {
	const workers, rounds, batches = 6, 2, 4
	total := 0
	for r := range rounds {
		raceUpdates(t, workers, func(w int) error {
			for b := range batches {
				ev := newEvent(fmt.Sprintf("app-%d", (w+b)%3), "user.login", ms(time.Duration(r)*time.Millisecond))
				if err := s.AppendEvents(t.Context(), []storage.EventRecord{ev}); err != nil {
					return fmt.Errorf("AppendEvents: %w", err)
				}
			}
			return nil
		})
		if t.Failed() {
			t.FailNow()
		}
		total += workers * batches
		if p, err := s.LastEventPos(t.Context()); err != nil || p != int64(total) {
			t.Fatalf("round %d: LastEventPos = %d, %v after %d acknowledged events", r, p, err, total)
		}
		if all := readAll(t, s, 0); len(all) != total {
			t.Fatalf("round %d: read %d events after %d acknowledged", r, len(all), total)
		}
	}
}

// testAtomicDeleteWhereKeepsChanged: DeleteLicensesWhere(banned) racing the unban of a
// license never deletes a license whose unban was acknowledged: either the delete came
// first (the unban answers ErrNotFound) or the license no longer matched.
func testAtomicDeleteWhereKeepsChanged(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	const rounds = 30
	kept := 0
	for r := range rounds {
		l := mustCreateLicenses(t, s, fullLicense(app.ID, fmt.Sprintf("BAN-%02d", r)))[0]
		var unbanErr error
		raceUpdates(t, 2, func(i int) error {
			if i == 0 {
				_, err := s.DeleteLicensesWhere(ctx, app.ID, storage.LicenseFilterBanned, ms(0))
				return err
			}
			_, unbanErr = s.UpdateLicense(ctx, app.ID, l.ID, func(x *storage.License) error {
				x.Banned = false
				return nil
			})
			if errors.Is(unbanErr, storage.ErrNotFound) {
				return nil // the delete came first
			}
			return unbanErr
		})
		if t.Failed() {
			return
		}
		got, err := s.GetLicense(ctx, app.ID, l.ID)
		switch {
		case unbanErr == nil && (err != nil || got.Banned):
			t.Fatalf("round %d: license unbanned (acknowledged) while a delete of the banned ones ran, then: banned %v, %v; want it kept",
				r, got.Banned, err)
		case unbanErr != nil && !errors.Is(err, storage.ErrNotFound):
			t.Fatalf("round %d: license deleted first (the unban answered %v), then GetLicense: %v", r, unbanErr, err)
		case err == nil:
			kept++
		}
	}
	t.Logf("%d of %d rounds unbanned first", kept, rounds)
}

// testAtomicDeviceDeletedOnce: of two racing DeleteDevice calls of one device, one answers
// the device and the other ErrNotFound, as of two deletes one after the other (the caller
// clears the user's hwid and reports the deletion once).
func testAtomicDeviceDeletedOnce(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, fullUser(app.ID, "owner"))
	const rounds = 20
	for r := range rounds {
		d := mustCreateDevice(t, s, fullDevice(u, fmt.Sprintf("HWID-%02d", r)))
		var deleted atomic.Int32
		raceUpdates(t, 2, func(int) error {
			got, err := s.DeleteDevice(ctx, app.ID, d.ID)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				return nil
			case err != nil:
				return err
			case got.ID != d.ID:
				return fmt.Errorf("DeleteDevice answered device %q, want %q", got.ID, d.ID)
			}
			deleted.Add(1)
			return nil
		})
		if n := deleted.Load(); n != 1 {
			t.Fatalf("round %d: %d of 2 racing DeleteDevice calls answered the device, want 1", r, n)
		}
	}
}

// testAtomicOwnerSessionPurgeKeepsRefreshed: PurgeOwnerSessions racing the refresh of a
// session it finds expired never removes the session once the refresh was acknowledged:
// either the purge came first (the refresh answers ErrNotFound) or the session no longer
// expired.
func testAtomicOwnerSessionPurgeKeepsRefreshed(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("purged"))
	const rounds = 20
	for r := range rounds {
		o := newOwnerSession(a.ID)
		o.ExpiresAt = ms(0)
		mustCreateOwnerSession(t, s, o)
		var refreshErr error
		raceUpdates(t, 2, func(i int) error {
			if i == 0 {
				_, err := s.PurgeOwnerSessions(ctx, ms(time.Second))
				return err
			}
			refreshErr = s.UpdateOwnerSession(ctx, o.ID, storage.OwnerSessionChange{LastUsedAt: ms(time.Second), ExpiresAt: ms(time.Hour)})
			if errors.Is(refreshErr, storage.ErrNotFound) {
				return nil // the purge came first
			}
			return refreshErr
		})
		if t.Failed() {
			return
		}
		got, err := s.GetOwnerSession(ctx, o.ID)
		if refreshErr == nil && (err != nil || !got.ExpiresAt.Equal(ms(time.Hour))) {
			t.Fatalf("round %d: session refreshed (acknowledged) while a purge ran, then: expires %v, %v; want it kept", r, got.ExpiresAt, err)
		}
		if err == nil {
			if err := s.DeleteOwnerSession(ctx, a.ID, o.ID); err != nil {
				t.Fatalf("DeleteOwnerSession: %v", err)
			}
		}
	}
}
