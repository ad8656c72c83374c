package client

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// gatedCopies holds a kill's delete of the durable copies (DeleteUserClientSessions) until
// the test lets it go: entered is closed when the delete is reached, release lets it run.
type gatedCopies struct {
	storage.ClientSessionStore
	entered, release chan struct{}
}

func (g gatedCopies) DeleteUserClientSessions(ctx context.Context, appID, userID string) (int, error) {
	close(g.entered)
	<-g.release
	return g.ClientSessionStore.DeleteUserClientSessions(ctx, appID, userID)
}

// gatedRestore holds the SetValue that makes a session live again from its copy until the
// test lets it go (only when armed: the kill's other writes go through).
type gatedRestore struct {
	SessionEngine
	armed            bool
	entered, release chan struct{}
}

func (g *gatedRestore) SetValue(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if g.armed {
		g.armed = false
		close(g.entered)
		<-g.release
	}
	return g.SessionEngine.SetValue(ctx, key, value, ttl)
}

// TestKillBeatsAConcurrentRestore: a call on a session that a kill (a ban) is ending finds
// the live session gone and restores it from its durable copy, read before the kill
// deleted that copy. The session must still end: it did not (a ban in the http tests left
// the banned user signed in on mongo+redis, where the copy's delete takes long enough for
// the client's next call to land in between). Both orders of the restore's write and the
// kill's end are checked, on the SQLite store and the memory engine.
func TestKillBeatsAConcurrentRestore(t *testing.T) {
	for _, restoreLast := range []bool{false, true} {
		name := "restore-before-copy-delete"
		if restoreLast {
			name = "restore-write-after-kill"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st, eng := sessionStores(t)
			copies := gatedCopies{ClientSessionStore: st, entered: make(chan struct{}), release: make(chan struct{})}
			live := &gatedRestore{SessionEngine: eng, entered: make(chan struct{}), release: make(chan struct{})}
			m := sessions{e: live, arch: newArchive(copies, slog.New(slog.DiscardHandler), time.Now), now: time.Now}

			s := Session{Token: newToken(), AppID: "app-1", AccountID: "acc-1", UserID: "user-1", Username: "carol",
				CreatedAt: time.Now(), LoginAt: time.Now()}
			if err := m.put(ctx, s, time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := m.arch.flush(ctx, false, nil); err != nil { // the copy is on disk
				t.Fatal(err)
			}

			killed := make(chan error, 1)
			go func() {
				_, err := m.endUser(ctx, s.AppID, s.UserID, func(int) {})
				killed <- err
			}()
			<-copies.entered // the live session is gone, its copy not yet
			if !restoreLast {
				// The call restores the session (its copy is still there) and answers it.
				if _, err := m.get(ctx, s.Token); err != nil {
					t.Fatalf("a call before the copy's delete: %v", err)
				}
				close(copies.release)
				if err := <-killed; err != nil {
					t.Fatal(err)
				}
			} else {
				// The call read the copy, but its write lands after the whole kill.
				live.armed = true
				got := make(chan error, 1)
				go func() {
					_, err := m.get(ctx, s.Token)
					got <- err
				}()
				<-live.entered
				close(copies.release)
				if err := <-killed; err != nil {
					t.Fatal(err)
				}
				close(live.release)
				if err := <-got; !errors.Is(err, errSessionExpired) {
					t.Fatalf("a call whose restore lost to the kill: %v, want the session expired", err)
				}
			}
			// The kill is done: the session stays ended, call after call.
			for range 3 {
				if _, err := m.get(ctx, s.Token); !errors.Is(err, errSessionExpired) {
					t.Fatalf("the killed session came back: %v", err)
				}
			}
			if n, err := m.e.Members(ctx, userSessionsKey(s.AppID, s.UserID)); err != nil || len(n) != 0 {
				t.Fatalf("the user still lists sessions: %v %v", n, err)
			}
		})
	}
}

// TestLateTouchMarkDoesNotUndoAKill: a call touched its live session just before a kill
// removed it, and its mark of the new expiry reached the archive after the kill deleted
// the copy (on another node, the kill cannot drop that node's pending marks). The next
// round must not write the copy back, or the killed session would come back at its next
// restore.
func TestLateTouchMarkDoesNotUndoAKill(t *testing.T) {
	ctx := t.Context()
	st, eng := sessionStores(t)
	m := sessions{e: eng, arch: newArchive(st, slog.New(slog.DiscardHandler), time.Now), now: time.Now}

	s := Session{Token: newToken(), AppID: "app-1", AccountID: "acc-1", UserID: "user-1", Username: "dave",
		CreatedAt: time.Now(), LoginAt: time.Now()}
	if err := m.put(ctx, s, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := m.arch.flush(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.touch(ctx, s, time.Hour); err != nil { // a call in flight: its touch succeeded
		t.Fatal(err)
	}
	if _, err := m.endUser(ctx, s.AppID, s.UserID, func(int) {}); err != nil { // the kill
		t.Fatal(err)
	}
	m.arch.extend(s, time.Now().Add(time.Hour)) // the call's mark lands after the kill
	if err := m.arch.flush(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.get(ctx, s.Token); !errors.Is(err, errSessionExpired) {
		t.Fatalf("the killed session came back from a late mark: %v", err)
	}

	// A session not yet written and then touched is still created by the round, and a
	// call that read it before its sign-in extends it without undoing the sign-in.
	fresh := Session{Token: newToken(), AppID: "app-1", AccountID: "acc-1", CreatedAt: time.Now()}
	signedIn := fresh
	signedIn.UserID, signedIn.Username, signedIn.LoginAt = "user-2", "frank", time.Now()
	m.arch.mark(signedIn, time.Now().Add(time.Hour))
	m.arch.extend(fresh, time.Now().Add(2*time.Hour))
	if err := m.arch.flush(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	got, exp, ok, err := m.arch.restore(ctx, fresh.Token)
	if err != nil || !ok {
		t.Fatalf("a new session touched before its round: stored %v, %v", ok, err)
	}
	if got.UserID != "user-2" || got.Username != "frank" {
		t.Fatalf("a call's extend undid the sign-in marked before it: %+v", got)
	}
	if exp.Before(time.Now().Add(90 * time.Minute)) {
		t.Fatalf("the copy expires %v: the extend's later expiry was lost", exp)
	}

	// A later full mark replaces the stored copy; an extend after it only moves its expiry.
	m.arch.mark(fresh, time.Now().Add(time.Hour))
	m.arch.extend(fresh, time.Now().Add(3*time.Hour))
	if err := m.arch.flush(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	if got, _, _, _ := m.arch.restore(ctx, fresh.Token); got.Username != "" {
		t.Fatalf("a new mark of the session did not replace the copy: %+v", got)
	}
}

// TestFailedRoundKeepsACreationAfterALaterExtend: a round that was to create a session's
// copy failed, and a call marked the session's new expiry while the round was out. The
// retry must still create the copy: the newer mark only extends a stored copy, and there
// is none yet.
func TestFailedRoundKeepsACreationAfterALaterExtend(t *testing.T) {
	ctx := t.Context()
	st, _ := sessionStores(t)
	flaky := &failingRounds{ClientSessionStore: st, fail: 1}
	arch := newArchive(flaky, slog.New(slog.DiscardHandler), time.Now)

	s := Session{Token: newToken(), AppID: "app-1", AccountID: "acc-1", UserID: "user-1", Username: "erin",
		CreatedAt: time.Now(), LoginAt: time.Now()}
	arch.mark(s, time.Now().Add(time.Hour))
	flaky.during = func() { arch.extend(s, time.Now().Add(2*time.Hour)) } // a call while the round is out
	if err := arch.flush(ctx, false, nil); err == nil {
		t.Fatal("the failing round answered no error")
	}
	flaky.during = nil
	if err := arch.flush(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	_, exp, ok, err := arch.restore(ctx, s.Token)
	if err != nil || !ok {
		t.Fatalf("the session whose creating round failed was never stored: %v, %v", ok, err)
	}
	if exp.Before(time.Now().Add(90 * time.Minute)) {
		t.Fatalf("the stored copy expires %v: the later extend's expiry was lost", exp)
	}
}

// failingRounds fails the next fail calls of SaveClientRound, after running during (a
// change that lands while the round is being written).
type failingRounds struct {
	storage.ClientSessionStore
	fail   int
	during func()
}

func (f *failingRounds) SaveClientRound(ctx context.Context, ss []storage.ClientSession, logins []storage.UserLogin) error {
	if f.during != nil {
		f.during()
	}
	if f.fail > 0 {
		f.fail--
		return errors.New("the store is unreachable")
	}
	return f.ClientSessionStore.SaveClientRound(ctx, ss, logins)
}

// sessionStores opens a SQLite store for the durable copies and a memory engine for the
// live sessions, both closed with the test.
func sessionStores(t *testing.T) (*sqlite.Store, *memory.Engine) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng := memory.New(memory.Config{})
	t.Cleanup(func() { eng.Close() })
	return st, eng
}
