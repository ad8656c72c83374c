package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

func admit(t *testing.T, e cluster.Engine, app, id, user string, ttl time.Duration, limit int) cluster.Admission {
	t.Helper()
	a, err := e.Admit(ctxT(t), app, cluster.PresentSocket{ID: id, User: user, Info: []byte("info-" + id)}, ttl, limit)
	if err != nil {
		t.Fatalf("Admit(%q, %q, %q): %v", app, id, user, err)
	}
	return a
}

// wantPresent checks the app's live sockets (ids, in any order) by List and Count.
func wantPresent(t *testing.T, e cluster.Engine, app string, ids ...string) []cluster.PresentSocket {
	t.Helper()
	list, err := e.List(ctxT(t), app)
	if err != nil {
		t.Fatalf("List(%q): %v", app, err)
	}
	got := make([]string, len(list))
	for i, p := range list {
		got[i] = p.ID
	}
	slices.Sort(got)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("List(%q) = %v, want %v", app, got, want)
	}
	if n, err := e.Count(ctxT(t), app); err != nil || n != len(ids) {
		t.Fatalf("Count(%q) = %d, %v; want %d", app, n, err, len(ids))
	}
	return list
}

func socketOf(t *testing.T, e cluster.Engine, app, user string) string {
	t.Helper()
	id, ok, err := e.SocketOf(ctxT(t), app, user)
	if err != nil {
		t.Fatalf("SocketOf(%q, %q): %v", app, user, err)
	}
	if !ok {
		return ""
	}
	return id
}

// testPresenceAdmitListRelease: admitted sockets are listed with their user and info,
// counted, found by user, and gone once released; apps are apart.
func testPresenceAdmitListRelease(t *testing.T, e cluster.Engine) {
	for _, s := range [][2]string{{"s1", "u1"}, {"s2", "u2"}} {
		if a := admit(t, e, "app", s[0], s[1], longWindow, 10); !a.Admitted || a.Replaced != "" {
			t.Fatalf("Admit %s = %+v, want admitted replacing nothing", s[0], a)
		}
	}
	admit(t, e, "other", "s3", "u1", longWindow, 10)
	for _, p := range wantPresent(t, e, "app", "s1", "s2") {
		if want := map[string]string{"s1": "u1", "s2": "u2"}[p.ID]; p.User != want || string(p.Info) != "info-"+p.ID {
			t.Fatalf("listed %+v, want user %s and info info-%s", p, want, p.ID)
		}
	}
	if id := socketOf(t, e, "app", "u2"); id != "s2" {
		t.Fatalf("SocketOf(u2) = %q, want s2", id)
	}
	if id := socketOf(t, e, "app", "nobody"); id != "" {
		t.Fatalf("SocketOf(nobody) = %q, want none", id)
	}
	n, err := e.Release(ctxT(t), "app", "s1", "s2", "never")
	if err != nil || n != 2 {
		t.Fatalf("Release = %d, %v; want 2", n, err)
	}
	wantPresent(t, e, "app")
	if id := socketOf(t, e, "app", "u1"); id != "" {
		t.Fatalf("SocketOf after release = %q", id)
	}
	if n, err := e.Release(ctxT(t), "app", "s1"); err != nil || n != 0 {
		t.Fatalf("Release again = %d, %v; want 0", n, err)
	}
	wantPresent(t, e, "other", "s3")
	if n, err := e.Release(ctxT(t), "app"); err != nil || n != 0 {
		t.Fatalf("Release of no socket = %d, %v", n, err)
	}
}

// testPresenceOneSocketPerUser: a user's newer socket replaces the earlier one (answered
// so that its holder closes it), and the earlier one's renewal is refused as superseded.
func testPresenceOneSocketPerUser(t *testing.T, e cluster.Engine) {
	admit(t, e, "app", "old", "u", longWindow, 10)
	admit(t, e, "app", "bystander", "v", longWindow, 10)
	if a := admit(t, e, "app", "new", "u", longWindow, 10); !a.Admitted || a.Replaced != "old" {
		t.Fatalf("Admit of the user's second socket = %+v, want admitted replacing old", a)
	}
	wantPresent(t, e, "app", "new", "bystander")
	if id := socketOf(t, e, "app", "u"); id != "new" {
		t.Fatalf("SocketOf = %q, want new", id)
	}
	r, err := e.Renew(ctxT(t), "app", []cluster.SocketLease{{ID: "old", User: "u"}, {ID: "new", User: "u"}}, longWindow)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Superseded, []string{"old"}) || len(r.Restored) != 0 {
		t.Fatalf("Renew = %+v, want old superseded only", r)
	}
	wantPresent(t, e, "app", "new", "bystander")
	// Admitting a live socket again renews it and rewrites its info, replacing nothing.
	a, err := e.Admit(ctxT(t), "app", cluster.PresentSocket{ID: "new", User: "u", Info: []byte("v2")}, longWindow, 1)
	if err != nil || !a.Admitted || a.Replaced != "" {
		t.Fatalf("re-Admit of a live socket in a full app = %+v, %v", a, err)
	}
	for _, p := range wantPresent(t, e, "app", "new", "bystander") {
		if p.ID == "new" && string(p.Info) != "v2" {
			t.Fatalf("info after re-Admit = %q, want v2", p.Info)
		}
	}
}

// testPresenceLimit: an app admits up to its limit; a refusal changes nothing; a user
// already present may reconnect to a full app (the new socket replaces the old); a
// lowered limit admits nobody new and keeps the present ones.
func testPresenceLimit(t *testing.T, e cluster.Engine) {
	for i := range 3 {
		if a := admit(t, e, "app", fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i), longWindow, 3); !a.Admitted {
			t.Fatalf("socket %d of 3 refused", i)
		}
	}
	if a := admit(t, e, "app", "s3", "u3", longWindow, 3); a.Admitted {
		t.Fatal("a fourth socket of three was admitted")
	}
	wantPresent(t, e, "app", "s0", "s1", "s2")
	if id := socketOf(t, e, "app", "u3"); id != "" {
		t.Fatalf("a refused socket's user has socket %q", id)
	}
	if a := admit(t, e, "app", "s1b", "u1", longWindow, 3); !a.Admitted || a.Replaced != "s1" {
		t.Fatalf("a present user's reconnection to a full app = %+v, want admitted replacing s1", a)
	}
	wantPresent(t, e, "app", "s0", "s1b", "s2")
	if a := admit(t, e, "app", "s4", "u4", longWindow, 2); a.Admitted {
		t.Fatal("admitted under a lowered limit")
	}
	if r, err := e.Renew(ctxT(t), "app", []cluster.SocketLease{{ID: "s0", User: "u0"}, {ID: "s2", User: "u2"}}, longWindow); err != nil || len(r.Restored)+len(r.Superseded) != 0 {
		t.Fatalf("Renew under a lowered limit = %+v, %v", r, err)
	}
	if n, err := e.Release(ctxT(t), "app", "s0"); err != nil || n != 1 {
		t.Fatalf("Release = %d, %v", n, err)
	}
	if a := admit(t, e, "app", "s4", "u4", longWindow, 3); !a.Admitted {
		t.Fatal("a released place was not given out")
	}
}

// testPresenceExpiry: a socket not renewed leaves the count, the list and its user's place
// when its ttl runs out, and frees its place; a renewed one stays.
func testPresenceExpiry(t *testing.T, e cluster.Engine) {
	admit(t, e, "app", "kept", "u1", shortWindow, 2)
	admit(t, e, "app", "lapsed", "u2", shortWindow, 2)
	if a := admit(t, e, "app", "waiting", "u3", longWindow, 2); a.Admitted {
		t.Fatal("admitted over two live sockets")
	}
	r, err := e.Renew(ctxT(t), "app", []cluster.SocketLease{{ID: "kept", User: "u1"}}, longWindow)
	if err != nil || len(r.Restored)+len(r.Superseded) != 0 {
		t.Fatalf("Renew of a live socket = %+v, %v", r, err)
	}
	time.Sleep(shortWindow + margin)
	wantPresent(t, e, "app", "kept")
	if id := socketOf(t, e, "app", "u2"); id != "" {
		t.Fatalf("an expired socket still holds its user: %q", id)
	}
	if a := admit(t, e, "app", "waiting", "u3", longWindow, 2); !a.Admitted || a.Replaced != "" {
		t.Fatalf("Admit after an expiry = %+v, want admitted", a)
	}
}

// testPresenceRenewShortens: a renewal sets the ttl it is given, shorter ones too.
func testPresenceRenewShortens(t *testing.T, e cluster.Engine) {
	admit(t, e, "app", "s1", "u1", longWindow, 5)
	admit(t, e, "app", "s2", "u2", longWindow, 5)
	if _, err := e.Renew(ctxT(t), "app", []cluster.SocketLease{{ID: "s1", User: "u1"}}, shortWindow); err != nil {
		t.Fatal(err)
	}
	wantPresent(t, e, "app", "s1", "s2")
	time.Sleep(shortWindow + margin)
	wantPresent(t, e, "app", "s2")
}

// testPresenceRenewRestores: a socket that lapsed is put back by its renewal when its user
// has no other socket (without info, which Describe writes again), whatever the limit;
// Describe changes a live socket's info only.
func testPresenceRenewRestores(t *testing.T, e cluster.Engine) {
	admit(t, e, "app", "lapsed", "u1", shortWindow, 1)
	time.Sleep(shortWindow + margin)
	admit(t, e, "app", "full", "u2", longWindow, 1)
	r, err := e.Renew(ctxT(t), "app", []cluster.SocketLease{{ID: "lapsed", User: "u1"}, {ID: "full", User: "u2"}}, longWindow)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Restored, []string{"lapsed"}) || len(r.Superseded) != 0 {
		t.Fatalf("Renew = %+v, want lapsed restored", r)
	}
	for _, p := range wantPresent(t, e, "app", "lapsed", "full") {
		if p.ID == "lapsed" && p.Info != nil {
			t.Fatalf("a restored socket has info %q, want none", p.Info)
		}
	}
	if id := socketOf(t, e, "app", "u1"); id != "lapsed" {
		t.Fatalf("SocketOf a restored socket's user = %q", id)
	}
	if ok, err := e.Describe(ctxT(t), "app", "lapsed", []byte("again")); err != nil || !ok {
		t.Fatalf("Describe = %v, %v", ok, err)
	}
	if ok, err := e.Describe(ctxT(t), "app", "never", []byte("x")); err != nil || ok {
		t.Fatalf("Describe of an absent socket = %v, %v; want false", ok, err)
	}
	for _, p := range wantPresent(t, e, "app", "lapsed", "full") {
		if p.ID == "lapsed" && string(p.Info) != "again" {
			t.Fatalf("info after Describe = %q", p.Info)
		}
	}
	if r, err := e.Renew(ctxT(t), "app", nil, longWindow); err != nil || len(r.Restored)+len(r.Superseded) != 0 {
		t.Fatalf("Renew of nothing = %+v, %v", r, err)
	}
}

// testPresenceRenewMany: one Renew call carries thousands of sockets, half of them live
// and half to restore (Redis's Lua takes at most a few thousand arguments in one unpack,
// the script works in chunks).
func testPresenceRenewMany(t *testing.T, e cluster.Engine) {
	const n = 2500
	leases := make([]cluster.SocketLease, n)
	for i := range leases {
		leases[i] = cluster.SocketLease{ID: fmt.Sprintf("s%04d", i), User: fmt.Sprintf("u%04d", i)}
		if i%2 == 0 {
			admit(t, e, "big", leases[i].ID, leases[i].User, longWindow, n)
		}
	}
	r, err := e.Renew(ctxT(t), "big", leases, longWindow)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Restored) != n/2 || len(r.Superseded) != 0 {
		t.Fatalf("Renew restored %d and superseded %d, want %d and 0", len(r.Restored), len(r.Superseded), n/2)
	}
	if got, err := e.Count(ctxT(t), "big"); err != nil || got != n {
		t.Fatalf("Count after the renewal = %d, %v; want %d", got, err, n)
	}
	list, err := e.List(ctxT(t), "big")
	if err != nil || len(list) != n {
		t.Fatalf("List = %d sockets, %v; want %d", len(list), err, n)
	}
}

// raceAdmit runs n admissions of distinct sockets on the given engines (round robin), of
// distinct users or all of user "same", and answers the admissions.
func raceAdmit(t *testing.T, engines []cluster.Engine, app string, n, limit int, sameUser bool) []cluster.Admission {
	out := make([]cluster.Admission, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			user := fmt.Sprintf("u%02d", i)
			if sameUser {
				user = "same"
			}
			a, err := engines[i%len(engines)].Admit(ctxT(t), app, cluster.PresentSocket{ID: fmt.Sprintf("s%02d", i), User: user}, longWindow, limit)
			if err != nil {
				t.Errorf("Admit: %v", err)
			}
			out[i] = a
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// checkRaces: of 40 racers for 7 places exactly 7 are admitted; of 20 racers of one user
// every one is admitted and exactly one is left, each replacing the one before it.
func checkRaces(t *testing.T, engines []cluster.Engine, app string) {
	admitted := 0
	for _, a := range raceAdmit(t, engines, app, 40, 7, false) {
		if a.Admitted {
			admitted++
		}
		if a.Replaced != "" {
			t.Fatalf("a socket of a distinct user replaced %q", a.Replaced)
		}
	}
	if admitted != 7 {
		t.Fatalf("%d of 40 racing sockets admitted, want exactly 7", admitted)
	}
	for _, e := range engines {
		if n, err := e.Count(ctxT(t), app); err != nil || n != 7 {
			t.Fatalf("Count = %d, %v; want 7", n, err)
		}
	}

	races := raceAdmit(t, engines, app+"-user", 20, 100, true)
	replaced := map[string]int{}
	for _, a := range races {
		if !a.Admitted {
			t.Fatal("a socket of one user was refused under the limit")
		}
		if a.Replaced != "" {
			replaced[a.Replaced]++
		}
	}
	list, err := engines[0].List(ctxT(t), app+"-user")
	if err != nil || len(list) != 1 {
		t.Fatalf("List after 20 sockets of one user = %v, %v; want exactly one", list, err)
	}
	// Every socket but the survivor was replaced exactly once.
	if len(replaced) != 19 || replaced[list[0].ID] != 0 {
		t.Fatalf("replaced %v (%d sockets), survivor %s; want the 19 others once each", replaced, len(replaced), list[0].ID)
	}
	for id, n := range replaced {
		if n != 1 {
			t.Fatalf("socket %s replaced %d times", id, n)
		}
	}
}

func testPresenceConcurrentAdmit(t *testing.T, e cluster.Engine) {
	checkRaces(t, []cluster.Engine{e}, "race")
}

// testSharedPresence: admissions racing on two nodes of one backend share the limit and the
// one-socket-per-user rule, and a socket admitted on one node is renewed, listed and
// released from the other.
func testSharedPresence(t *testing.T, a, b cluster.Engine) {
	checkRaces(t, []cluster.Engine{a, b}, "shared-race")
	admit(t, a, "app", "s1", "u1", shortWindow, 5)
	if r, err := b.Renew(ctxT(t), "app", []cluster.SocketLease{{ID: "s1", User: "u1"}}, longWindow); err != nil || len(r.Restored)+len(r.Superseded) != 0 {
		t.Fatalf("Renew on the other node = %+v, %v", r, err)
	}
	time.Sleep(shortWindow + margin)
	wantPresent(t, a, "app", "s1")
	if n, err := b.Release(ctxT(t), "app", "s1"); err != nil || n != 1 {
		t.Fatalf("Release on the other node = %d, %v", n, err)
	}
	wantPresent(t, a, "app")
}

// testPresenceInvalid: empty names, a ttl under 1 ms and a limit under 1 are refused.
func testPresenceInvalid(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	ok := cluster.PresentSocket{ID: "s", User: "u"}
	var errs []error
	for _, c := range []struct {
		app   string
		s     cluster.PresentSocket
		ttl   time.Duration
		limit int
	}{
		{"", ok, time.Minute, 1},
		{"app", cluster.PresentSocket{User: "u"}, time.Minute, 1},
		{"app", cluster.PresentSocket{ID: "s"}, time.Minute, 1},
		{"app", ok, time.Microsecond, 1},
		{"app", ok, time.Minute, 0},
	} {
		_, err := e.Admit(ctx, c.app, c.s, c.ttl, c.limit)
		errs = append(errs, err)
	}
	_, err := e.Renew(ctx, "app", []cluster.SocketLease{{ID: "s"}}, time.Minute)
	errs = append(errs, err)
	_, err = e.Renew(ctx, "app", []cluster.SocketLease{{ID: "s", User: "u"}}, 0)
	errs = append(errs, err)
	_, err = e.Count(ctx, "")
	errs = append(errs, err)
	_, err = e.List(ctx, "")
	errs = append(errs, err)
	_, _, err = e.SocketOf(ctx, "app", "")
	errs = append(errs, err)
	_, err = e.Release(ctx, "")
	errs = append(errs, err)
	_, err = e.Describe(ctx, "app", "", nil)
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("invalid call %d succeeded", i)
		} else if errors.Is(err, cluster.ErrUnavailable) {
			t.Errorf("invalid call %d answered ErrUnavailable: %v", i, err)
		}
	}
	wantPresent(t, e, "app")
}

// BenchmarkPresenceAdmit measures one admission into an app that grows to b.N sockets (the
// cost of opening many sockets of one app), each of its own user.
func BenchmarkPresenceAdmit(b *testing.B, e cluster.Engine) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("s%d", i)
		if _, err := e.Admit(ctx, "bench", cluster.PresentSocket{ID: id, User: "u" + id, Info: []byte(`{"status":"online"}`)}, time.Minute, b.N+1); err != nil {
			b.Fatalf("Admit: %v", err)
		}
	}
}
