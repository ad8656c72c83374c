package storagetest

import (
	"slices"
	"testing"

	"github.com/keyward/keyward/storage"
)

var userBatchTests = []subtest{
	{"GetUsers", testGetUsers},
}

// testGetUsers: GetUsers answers the app's users among the ids, whole, and leaves out
// unknown ids and users of another app.
func testGetUsers(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	var want []storage.AppUser
	ids := []string{"missing"}
	for _, name := range []string{"ann", "bob", "cid"} {
		u := mustCreateUser(t, s, fullUser(app.ID, name))
		want = append(want, u)
		ids = append(ids, u.ID)
	}
	stranger := mustCreateUser(t, s, fullUser(other.ID, "dan"))
	ids = append(ids, stranger.ID)
	mustCreateUser(t, s, fullUser(app.ID, "not-asked"))

	got, err := s.GetUsers(ctx, app.ID, ids)
	if err != nil {
		t.Fatalf("GetUsers: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("GetUsers: %d users, want %d", len(got), len(want))
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(u storage.AppUser) bool { return u.ID == w.ID })
		if i < 0 {
			t.Fatalf("GetUsers lacks %s", w.Username)
		}
		one, err := s.GetUser(ctx, app.ID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := diff(one, got[i]); d != "" {
			t.Fatalf("GetUsers and GetUser differ for %s: %s", w.Username, d)
		}
	}
	if got, err := s.GetUsers(ctx, app.ID, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetUsers(no ids) = %v, %v", got, err)
	}
}
