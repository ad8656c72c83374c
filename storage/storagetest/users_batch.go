package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/keyward/keyward/storage"
)

var userBatchTests = []subtest{
	{"GetUsers", testGetUsers},
	{"GetUserStandings", testGetUserStandings},
	{"CreateUsers", testCreateUsers},
	{"CreateVariablesOfManyUsers", testCreateVariablesOfManyUsers},
}

// testCreateUsers: a batch is written whole, and a batch with a taken or repeated
// username, or a user of an unknown app, writes nothing.
func testCreateUsers(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	batch := []storage.AppUser{fullUser(app.ID, "ann"), fullUser(app.ID, "bob"), fullUser(other.ID, "ann")}
	if err := s.CreateUsers(ctx, batch); err != nil {
		t.Fatalf("CreateUsers: %v", err)
	}
	for _, w := range batch {
		got, err := s.GetUser(ctx, w.AppID, w.ID)
		if err != nil {
			t.Fatalf("GetUser(%s): %v", w.Username, err)
		}
		if d := diff(w, got); d != "" {
			t.Fatalf("user %s read back differs: %s", w.Username, d)
		}
	}
	refused := []struct {
		name  string
		batch []storage.AppUser
		want  error
	}{
		{"taken username", []storage.AppUser{fullUser(app.ID, "cid"), fullUser(app.ID, "BOB")}, storage.ErrConflict},
		{"repeated username", []storage.AppUser{fullUser(app.ID, "dan"), fullUser(app.ID, "Dan")}, storage.ErrConflict},
		{"unknown app", []storage.AppUser{fullUser(app.ID, "eve"), fullUser("no-such-app", "fay")}, storage.ErrNotFound},
	}
	for _, r := range refused {
		if err := s.CreateUsers(ctx, r.batch); !errors.Is(err, r.want) {
			t.Fatalf("CreateUsers(%s) = %v, want %v", r.name, err, r.want)
		}
		for _, u := range r.batch {
			if _, err := s.GetUser(ctx, u.AppID, u.ID); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("CreateUsers(%s) left %s behind (%v)", r.name, u.Username, err)
			}
		}
	}
	if n, err := s.CountUsers(ctx, app.ID); err != nil || n != 2 {
		t.Fatalf("CountUsers = %d, %v; want 2", n, err)
	}
	if err := s.CreateUsers(ctx, nil); err != nil {
		t.Fatalf("CreateUsers(none) = %v", err)
	}
}

// testCreateVariablesOfManyUsers: the variables of many users are written in one batch,
// and one owner missing among many refuses the whole batch.
func testCreateVariablesOfManyUsers(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	var users []storage.AppUser
	for i := range 30 {
		users = append(users, fullUser(app.ID, fmt.Sprintf("u%02d", i)))
	}
	stranger := fullUser(other.ID, "stranger")
	if err := s.CreateUsers(ctx, append(users, stranger)); err != nil {
		t.Fatal(err)
	}
	userVar := func(ownerID, key string) storage.Variable {
		now := storage.Now()
		return storage.Variable{ID: "var-" + ownerID + "-" + key, AppID: app.ID, Scope: storage.ScopeUser, OwnerID: ownerID,
			Key: key, Value: "v", Type: "STRING", CreatedAt: now, UpdatedAt: now}
	}
	var vs []storage.Variable
	for _, u := range users {
		vs = append(vs, userVar(u.ID, "a"), userVar(u.ID, "b"))
	}
	if err := s.CreateVariables(ctx, vs); err != nil {
		t.Fatalf("CreateVariables(60 variables of 30 users): %v", err)
	}
	for _, owner := range []string{"no-such-user", stranger.ID} {
		batch := []storage.Variable{userVar(users[0].ID, "c"), userVar(owner, "a"), userVar(users[1].ID, "c")}
		if err := s.CreateVariables(ctx, batch); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("CreateVariables with owner %s = %v, want ErrNotFound", owner, err)
		}
		if got, err := s.ListVariables(ctx, app.ID, storage.ScopeUser, users[0].ID); err != nil || len(got) != 2 {
			t.Fatalf("a refused batch left variables: %d, %v", len(got), err)
		}
	}
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
