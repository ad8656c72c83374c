package storagetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var variableTests = []subtest{
	{"VariableRoundTrip", testVariableRoundTrip},
	{"VariableConflict", testVariableConflict},
	{"VariableUnknownOwner", testVariableUnknownOwner},
	{"VariableScopedToApp", testVariableScopedToApp},
	{"VariableUpdate", testVariableUpdate},
	{"VariableUpdateConcurrent", testVariableUpdateConcurrent},
	{"VariableDelete", testVariableDelete},
	{"VariableDeletedWithUser", testVariableDeletedWithUser},
	{"VariableDeletedWithLicenses", testVariableDeletedWithLicenses},
	{"AppRecordsTimePrecisionMore", testMoreRecordsTimePrecision},
	{"AppDeleteCascadeMore", testAppDeleteCascadeMore},
	{"AppCountRecordsMore", testAppCountRecordsMore},
}

func fullVariable(appID, scope, ownerID, key string) storage.Variable {
	n := seq.Add(1)
	return storage.Variable{
		ID:        fmt.Sprintf("var-%05d", n),
		AppID:     appID,
		Scope:     scope,
		OwnerID:   ownerID,
		Key:       key,
		Value:     fmt.Sprintf(`{"value":%d,"key":%q}`, n, key),
		Type:      "JSON",
		CreatedAt: ms(-12 * 24 * time.Hour),
		UpdatedAt: ms(-90*time.Minute + 13*time.Millisecond),
	}
}

func minimalVariable(appID, scope, ownerID, key string) storage.Variable {
	return storage.Variable{ID: uniq("var-min-"), AppID: appID, Scope: scope, OwnerID: ownerID, Key: key}
}

func mustCreateVariables(t *testing.T, s storage.Store, vs ...storage.Variable) []storage.Variable {
	t.Helper()
	if err := s.CreateVariables(t.Context(), vs); err != nil {
		t.Fatalf("CreateVariables(%d variables): %v", len(vs), err)
	}
	return vs
}

func wantVariable(t *testing.T, s storage.Store, want storage.Variable) {
	t.Helper()
	got, err := s.GetVariable(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetVariable(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetVariable(%q) differs: %s", want.ID, d)
	}
}

// wantVariables fails unless the variables of the scope and owner are exactly want, in
// key order.
func wantVariables(t *testing.T, s storage.Store, appID, scope, ownerID string, want ...storage.Variable) {
	t.Helper()
	got, err := s.ListVariables(t.Context(), appID, scope, ownerID)
	if err != nil {
		t.Fatalf("ListVariables(%s %s %q): %v", appID, scope, ownerID, err)
	}
	sorted := ordered(want, func(a, b storage.Variable) int { return strings.Compare(a.Key, b.Key) }, false)
	wantSame(t, fmt.Sprintf("ListVariables(%s %s %q)", appID, scope, ownerID), sorted, got)
}

// owners is an app with a user and a license, the three kinds of variable owner.
type owners struct {
	app  storage.App
	user storage.AppUser
	lic  storage.License
}

func makeOwners(t *testing.T, s storage.Store, accountID, name string) owners {
	t.Helper()
	app := mustCreateApp(t, s, fullApp(accountID, name))
	return owners{
		app:  app,
		user: mustCreateUser(t, s, fullUser(app.ID, "owner")),
		lic:  mustCreateLicenses(t, s, fullLicense(app.ID, "OWNER-KEY"))[0],
	}
}

// scopes answers the (scope, owner) pairs of o, app first.
func (o owners) scopes() [][2]string {
	return [][2]string{{storage.ScopeApp, ""}, {storage.ScopeUser, o.user.ID}, {storage.ScopeLicense, o.lic.ID}}
}

func testVariableRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	var all []storage.Variable
	for _, sc := range o.scopes() {
		// Keys out of order and differing in case: lists sort them as stored, byte order.
		vs := []storage.Variable{
			fullVariable(o.app.ID, sc[0], sc[1], "zeta"),
			minimalVariable(o.app.ID, sc[0], sc[1], "Alpha"),
			fullVariable(o.app.ID, sc[0], sc[1], "beta"),
			fullVariable(o.app.ID, sc[0], sc[1], "_under"),
			// The same key in every scope and owner: no conflict.
			fullVariable(o.app.ID, sc[0], sc[1], "shared"),
		}
		mustCreateVariables(t, s, vs...)
		all = append(all, vs...)
	}
	for _, v := range all {
		wantVariable(t, s, v)
		got, err := s.GetVariableByKey(ctx, v.AppID, v.Scope, v.OwnerID, v.Key)
		if err != nil {
			t.Fatalf("GetVariableByKey(%s %q %q): %v", v.Scope, v.OwnerID, v.Key, err)
		}
		if d := diff(v, got); d != "" {
			t.Errorf("GetVariableByKey(%s %q %q) differs: %s", v.Scope, v.OwnerID, v.Key, d)
		}
	}
	for i, sc := range o.scopes() {
		wantVariables(t, s, o.app.ID, sc[0], sc[1], all[5*i:5*i+5]...)
	}

	// Keys are compared exactly, within their own scope and owner.
	for _, c := range []struct{ scope, owner, key string }{
		{storage.ScopeApp, "", "ZETA"},
		{storage.ScopeApp, "", "zet"},
		{storage.ScopeApp, o.user.ID, "zeta"},
		{storage.ScopeUser, "", "zeta"},
		{storage.ScopeUser, o.lic.ID, "zeta"},
		{storage.ScopeLicense, o.user.ID, "zeta"},
	} {
		_, err := s.GetVariableByKey(ctx, o.app.ID, c.scope, c.owner, c.key)
		wantNotFound(t, fmt.Sprintf("GetVariableByKey(%s %q %q)", c.scope, c.owner, c.key), err)
	}
	// An owner without variables lists none.
	other := mustCreateUser(t, s, fullUser(o.app.ID, "other"))
	wantVariables(t, s, o.app.ID, storage.ScopeUser, other.ID)
	if err := s.CreateVariables(ctx, nil); err != nil {
		t.Errorf("CreateVariables(nil): %v", err)
	}
}

func testVariableConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	second := mustCreateUser(t, s, fullUser(o.app.ID, "second"))
	for _, sc := range o.scopes() {
		first := mustCreateVariables(t, s, fullVariable(o.app.ID, sc[0], sc[1], "taken"))[0]
		other := mustCreateVariables(t, s, fullVariable(o.app.ID, sc[0], sc[1], "other"))[0]
		sameID := fullVariable(o.app.ID, sc[0], sc[1], "fresh")
		sameID.ID = first.ID

		batch := func(n, at int, key string) []storage.Variable {
			var vs []storage.Variable
			for i := range n {
				vs = append(vs, fullVariable(o.app.ID, sc[0], sc[1], fmt.Sprintf("%s-%03d", uniq("b"), i)))
			}
			vs[at].Key = key
			return vs
		}
		dup := batch(50, 49, "dup")
		dup[10].Key = "dup"
		for name, vs := range map[string][]storage.Variable{
			"a taken key":                  {fullVariable(o.app.ID, sc[0], sc[1], "taken")},
			"a taken id":                   {sameID},
			"a taken key in a batch":       batch(50, 25, "taken"),
			"a taken key last":             batch(50, 49, "taken"),
			"a key twice in the batch":     dup,
			"a key twice in a short batch": {fullVariable(o.app.ID, sc[0], sc[1], "x"), fullVariable(o.app.ID, sc[0], sc[1], "x")},
			"an identical variable":        {first},
			"a taken id of another's scope": {func() storage.Variable {
				v := fullVariable(o.app.ID, storage.ScopeApp, "", "y")
				v.ID = first.ID
				return v
			}()},
		} {
			wantConflict(t, fmt.Sprintf("CreateVariables(%s) with %s", sc[0], name), s.CreateVariables(ctx, vs))
			wantVariables(t, s, o.app.ID, sc[0], sc[1], first, other)
		}
		_, err := s.GetVariableByKey(ctx, o.app.ID, storage.ScopeApp, "", "y")
		wantNotFound(t, "GetVariableByKey of a refused variable", err)

		// A key differing in case is another key.
		mustCreateVariables(t, s, fullVariable(o.app.ID, sc[0], sc[1], "TAKEN"))

		_, err = s.UpdateVariable(ctx, o.app.ID, other.ID, func(v *storage.Variable) error { v.Key = "taken"; return nil })
		wantConflict(t, "UpdateVariable("+sc[0]+") to a taken key", err)
		wantVariable(t, s, other)
		// A changed key frees the old one.
		moved, err := s.UpdateVariable(ctx, o.app.ID, other.ID, func(v *storage.Variable) error { v.Key = "moved"; return nil })
		if err != nil {
			t.Fatalf("UpdateVariable(%s) changing the key: %v", sc[0], err)
		}
		if moved.Key != "moved" {
			t.Errorf("UpdateVariable(%s) answered key %q, want moved", sc[0], moved.Key)
		}
		mustCreateVariables(t, s, fullVariable(o.app.ID, sc[0], sc[1], "other"))
	}
	// A key taken by one user is free for another, and for the app.
	mustCreateVariables(t, s, fullVariable(o.app.ID, storage.ScopeUser, second.ID, "taken"))
	if _, err := s.GetVariableByKey(ctx, o.app.ID, storage.ScopeUser, second.ID, "taken"); err != nil {
		t.Errorf("GetVariableByKey(second user): %v", err)
	}
}

func testVariableUnknownOwner(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	foreign := makeOwners(t, s, "acc-1", "foreign")
	good := fullVariable(o.app.ID, storage.ScopeApp, "", "good")

	cases := map[string]storage.Variable{
		"an unknown app":                 fullVariable("no-such-app", storage.ScopeApp, "", "k"),
		"an unknown app's user":          fullVariable("no-such-app", storage.ScopeUser, o.user.ID, "k"),
		"an unknown user":                fullVariable(o.app.ID, storage.ScopeUser, "no-such-user", "k"),
		"a user of another app":          fullVariable(o.app.ID, storage.ScopeUser, foreign.user.ID, "k"),
		"a user without id":              fullVariable(o.app.ID, storage.ScopeUser, "", "k"),
		"an unknown license":             fullVariable(o.app.ID, storage.ScopeLicense, "no-such-license", "k"),
		"a license of another app":       fullVariable(o.app.ID, storage.ScopeLicense, foreign.lic.ID, "k"),
		"a user's id as a license":       fullVariable(o.app.ID, storage.ScopeLicense, o.user.ID, "k"),
		"a license's id as a user":       fullVariable(o.app.ID, storage.ScopeUser, o.lic.ID, "k"),
		"a license under an unknown app": fullVariable("no-such-app", storage.ScopeLicense, o.lic.ID, "k"),
	}
	for name, v := range cases {
		wantNotFound(t, "CreateVariables under "+name, s.CreateVariables(ctx, []storage.Variable{v}))
		// A batch with one variable of an unknown owner is refused whole.
		wantNotFound(t, "CreateVariables of a batch with a variable under "+name, s.CreateVariables(ctx, []storage.Variable{good, v}))
		_, err := s.GetVariable(ctx, v.AppID, v.ID)
		wantNotFound(t, "GetVariable of a refused variable", err)
	}
	// Malformed scopes are errors too, of no sentinel kind, and write nothing.
	for name, v := range map[string]storage.Variable{
		"an unknown scope":           fullVariable(o.app.ID, "global", "", "k"),
		"an app variable with owner": fullVariable(o.app.ID, storage.ScopeApp, o.user.ID, "k"),
	} {
		if err := s.CreateVariables(ctx, []storage.Variable{good, v}); err == nil {
			t.Errorf("CreateVariables with %s succeeded, want an error", name)
		}
	}
	for _, sc := range o.scopes() {
		wantVariables(t, s, o.app.ID, sc[0], sc[1])
	}
	wantVariables(t, s, foreign.app.ID, storage.ScopeUser, foreign.user.ID)
	mustCreateVariables(t, s, good)
	wantVariable(t, s, good)
}

func testVariableScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	for _, sc := range o.scopes() {
		v := mustCreateVariables(t, s, fullVariable(o.app.ID, sc[0], sc[1], "mine"))[0]
		_, err := s.GetVariable(ctx, other.ID, v.ID)
		wantNotFound(t, "GetVariable from another app", err)
		_, err = s.GetVariableByKey(ctx, other.ID, sc[0], sc[1], v.Key)
		wantNotFound(t, "GetVariableByKey from another app", err)
		wantVariables(t, s, other.ID, sc[0], sc[1])
		_, err = s.UpdateVariable(ctx, other.ID, v.ID, func(*storage.Variable) error {
			t.Error("UpdateVariable called fn for a variable of another app")
			return nil
		})
		wantNotFound(t, "UpdateVariable from another app", err)
		wantNotFound(t, "DeleteVariable from another app", s.DeleteVariable(ctx, other.ID, v.ID))
		wantVariable(t, s, v)
	}
	_, err := s.UpdateVariable(ctx, o.app.ID, "missing", func(*storage.Variable) error {
		t.Error("UpdateVariable called fn for a missing variable")
		return nil
	})
	wantNotFound(t, "UpdateVariable(missing)", err)
	_, err = s.GetVariable(ctx, o.app.ID, "missing")
	wantNotFound(t, "GetVariable(missing)", err)
	wantNotFound(t, "DeleteVariable(missing)", s.DeleteVariable(ctx, o.app.ID, "missing"))
}

func testVariableUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	v := mustCreateVariables(t, s, minimalVariable(o.app.ID, storage.ScopeUser, o.user.ID, "before"))[0]
	bystander := mustCreateVariables(t, s, fullVariable(o.app.ID, storage.ScopeUser, o.user.ID, "bystander"))[0]

	want := fullVariable(o.app.ID, storage.ScopeUser, o.user.ID, "after")
	want.ID, want.CreatedAt = v.ID, v.CreatedAt
	got, err := s.UpdateVariable(ctx, o.app.ID, v.ID, func(x *storage.Variable) error {
		if d := diff(v, *x); d != "" {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateVariable: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateVariable result differs: %s", d)
	}
	wantVariable(t, s, want)
	wantVariable(t, s, bystander)
	_, err = s.GetVariableByKey(ctx, o.app.ID, storage.ScopeUser, o.user.ID, "before")
	wantNotFound(t, "GetVariableByKey(old key)", err)

	// fn cannot move the variable: id, app, scope, owner and creation time are kept.
	got, err = s.UpdateVariable(ctx, o.app.ID, v.ID, func(x *storage.Variable) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", "other-app", ms(time.Hour)
		x.Scope, x.OwnerID = storage.ScopeLicense, o.lic.ID
		x.Value = "kept the rest"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateVariable: %v", err)
	}
	want.Value = "kept the rest"
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateVariable changing identity: result differs: %s", d)
	}
	wantVariable(t, s, want)
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, o.lic.ID)
	wantVariables(t, s, o.app.ID, storage.ScopeUser, o.user.ID, want, bystander)

	zero := storage.Variable{ID: v.ID, AppID: o.app.ID, Scope: storage.ScopeUser, OwnerID: o.user.ID, Key: "z"}
	got, err = s.UpdateVariable(ctx, o.app.ID, v.ID, func(x *storage.Variable) error { *x = zero; return nil })
	if err != nil {
		t.Fatalf("UpdateVariable to zero values: %v", err)
	}
	zero.CreatedAt = want.CreatedAt // kept
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateVariable (zero values) result differs: %s", d)
	}
	wantVariable(t, s, zero)

	errBoom := errors.New("boom")
	_, err = s.UpdateVariable(ctx, o.app.ID, v.ID, func(x *storage.Variable) error {
		x.Value = "never"
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateVariable with a failing fn: error = %v, want fn's error only", err)
	}
	wantVariable(t, s, zero)
}

// testVariableUpdateConcurrent runs read-modify-write updaters of one variable at once: the
// value is a counter each one increments, so a lost update shows.
func testVariableUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	v := minimalVariable(o.app.ID, storage.ScopeUser, o.user.ID, "counter")
	v.Value, v.Type = "0", "INT"
	mustCreateVariables(t, s, v)
	bystander := mustCreateVariables(t, s, fullVariable(o.app.ID, storage.ScopeUser, o.user.ID, "bystander"))[0]

	const workers = 20
	raceUpdates(t, workers, func(i int) error {
		_, err := s.UpdateVariable(ctx, o.app.ID, v.ID, func(x *storage.Variable) error {
			n, err := strconv.Atoi(x.Value)
			if err != nil {
				return err
			}
			x.Value = strconv.Itoa(n + 1)
			if i%2 == 0 {
				x.Type += "+"
			}
			return nil
		})
		return err
	})
	got, err := s.GetVariable(ctx, o.app.ID, v.ID)
	if err != nil {
		t.Fatalf("GetVariable: %v", err)
	}
	if got.Value != strconv.Itoa(workers) {
		t.Errorf("counter = %s after %d concurrent increments, want %d", got.Value, workers, workers)
	}
	if want := "INT" + strings.Repeat("+", workers/2); got.Type != want {
		t.Errorf("Type = %q, want %q", got.Type, want)
	}
	wantVariable(t, s, bystander)
}

func testVariableDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	vs := mustCreateVariables(t, s, fullVariable(o.app.ID, storage.ScopeLicense, o.lic.ID, "one"),
		fullVariable(o.app.ID, storage.ScopeLicense, o.lic.ID, "two"))
	if err := s.DeleteVariable(ctx, o.app.ID, vs[0].ID); err != nil {
		t.Fatalf("DeleteVariable: %v", err)
	}
	_, err := s.GetVariable(ctx, o.app.ID, vs[0].ID)
	wantNotFound(t, "GetVariable after DeleteVariable", err)
	_, err = s.GetVariableByKey(ctx, o.app.ID, storage.ScopeLicense, o.lic.ID, "one")
	wantNotFound(t, "GetVariableByKey after DeleteVariable", err)
	wantNotFound(t, "second DeleteVariable", s.DeleteVariable(ctx, o.app.ID, vs[0].ID))
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, o.lic.ID, vs[1])
	// The id and the key are free again.
	mustCreateVariables(t, s, vs[0])
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, o.lic.ID, vs...)
}

// seedVariables gives every owner of o two variables and answers them by owner.
func seedVariables(t *testing.T, s storage.Store, o owners) map[[2]string][]storage.Variable {
	t.Helper()
	out := map[[2]string][]storage.Variable{}
	for _, sc := range o.scopes() {
		out[sc] = mustCreateVariables(t, s, fullVariable(o.app.ID, sc[0], sc[1], "k1"), fullVariable(o.app.ID, sc[0], sc[1], "k2"))
	}
	return out
}

func testVariableDeletedWithUser(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	stays := mustCreateUser(t, s, fullUser(o.app.ID, "stays"))
	vars := seedVariables(t, s, o)
	staying := mustCreateVariables(t, s, fullVariable(o.app.ID, storage.ScopeUser, stays.ID, "k1"))

	if err := s.DeleteUser(ctx, o.app.ID, o.user.ID); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	wantVariables(t, s, o.app.ID, storage.ScopeUser, o.user.ID)
	for _, v := range vars[[2]string{storage.ScopeUser, o.user.ID}] {
		_, err := s.GetVariable(ctx, o.app.ID, v.ID)
		wantNotFound(t, "GetVariable of the deleted user's variable", err)
	}
	wantVariables(t, s, o.app.ID, storage.ScopeUser, stays.ID, staying...)
	wantVariables(t, s, o.app.ID, storage.ScopeApp, "", vars[[2]string{storage.ScopeApp, ""}]...)
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, o.lic.ID, vars[[2]string{storage.ScopeLicense, o.lic.ID}]...)

	// A user created again under the same id starts without variables, and may reuse keys.
	mustCreateUser(t, s, o.user)
	wantVariables(t, s, o.app.ID, storage.ScopeUser, o.user.ID)
	mustCreateVariables(t, s, vars[[2]string{storage.ScopeUser, o.user.ID}]...)
}

func testVariableDeletedWithLicenses(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := makeOwners(t, s, "acc-1", "app")
	other := makeOwners(t, s, "acc-1", "other")
	vars := seedVariables(t, s, o)
	otherVars := seedVariables(t, s, other)
	now := base

	lic := func(key string, banned bool) (storage.License, []storage.Variable) {
		l := fullLicense(o.app.ID, key)
		l.Banned, l.UsedCount, l.ExpiresAt = banned, 0, time.Time{}
		mustCreateLicenses(t, s, l)
		return l, mustCreateVariables(t, s, fullVariable(o.app.ID, storage.ScopeLicense, l.ID, "a"),
			fullVariable(o.app.ID, storage.ScopeLicense, l.ID, "b"))
	}
	byID1, _ := lic("BY-ID-1", false)
	byID2, _ := lic("BY-ID-2", false)
	banned, _ := lic("BANNED", true)
	kept, keptVars := lic("KEPT", false)

	// DeleteLicense: the license's variables go, nobody else's.
	if err := s.DeleteLicense(ctx, o.app.ID, o.lic.ID); err != nil {
		t.Fatalf("DeleteLicense: %v", err)
	}
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, o.lic.ID)
	for _, v := range vars[[2]string{storage.ScopeLicense, o.lic.ID}] {
		_, err := s.GetVariable(ctx, o.app.ID, v.ID)
		wantNotFound(t, "GetVariable of the deleted license's variable", err)
	}
	wantVariables(t, s, o.app.ID, storage.ScopeApp, "", vars[[2]string{storage.ScopeApp, ""}]...)
	wantVariables(t, s, o.app.ID, storage.ScopeUser, o.user.ID, vars[[2]string{storage.ScopeUser, o.user.ID}]...)

	// DeleteLicenses: only the licenses of the app that went; another app's license named
	// among the ids keeps its variables.
	n, err := s.DeleteLicenses(ctx, o.app.ID, []string{byID1.ID, byID2.ID, other.lic.ID, "unknown"})
	if err != nil || n != 2 {
		t.Fatalf("DeleteLicenses = (%d, %v), want 2", n, err)
	}
	for _, l := range []storage.License{byID1, byID2} {
		wantVariables(t, s, o.app.ID, storage.ScopeLicense, l.ID)
	}
	wantVariables(t, s, other.app.ID, storage.ScopeLicense, other.lic.ID, otherVars[[2]string{storage.ScopeLicense, other.lic.ID}]...)

	// DeleteLicensesWhere: the matching licenses' variables go.
	if n, err := s.DeleteLicensesWhere(ctx, o.app.ID, storage.LicenseFilterBanned, now); err != nil || n != 1 {
		t.Fatalf("DeleteLicensesWhere(banned) = (%d, %v), want 1", n, err)
	}
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, banned.ID)
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, kept.ID, keptVars...)
	if n, err := s.DeleteLicensesWhere(ctx, o.app.ID, storage.LicenseFilterUsed, now); err != nil || n != 0 {
		t.Fatalf("DeleteLicensesWhere(used) = (%d, %v), want 0", n, err)
	}
	wantVariables(t, s, o.app.ID, storage.ScopeLicense, kept.ID, keptVars...)
	wantVariables(t, s, o.app.ID, storage.ScopeUser, o.user.ID, vars[[2]string{storage.ScopeUser, o.user.ID}]...)
	for _, sc := range other.scopes() {
		wantVariables(t, s, other.app.ID, sc[0], sc[1], otherVars[sc]...)
	}
}

// testMoreRecordsTimePrecision writes every time field of variables, files, rules and log
// entries at the edges of millisecond precision and reads each back as the same instant.
func testMoreRecordsTimePrecision(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-time", "time"))
	for i, tm := range timeCases {
		v := minimalVariable(app.ID, storage.ScopeApp, "", fmt.Sprintf("k%d", i))
		v.CreatedAt, v.UpdatedAt = tm, tm.Add(time.Millisecond)
		mustCreateVariables(t, s, v)
		wantVariable(t, s, v)

		f := minimalFile(app.ID, "f")
		f.CreatedAt, f.UpdatedAt = tm, tm.Add(-time.Millisecond)
		mustCreateFile(t, s, f)
		wantFile(t, s, f)

		r := minimalRule(app.ID, ruleIP, blacklist, fmt.Sprintf("192.0.2.%d", i))
		r.CreatedAt, r.UpdatedAt = tm, tm.Add(999*time.Millisecond)
		mustCreateRules(t, s, r)
		wantRule(t, s, r)

		e := minimalLog(app.ID, "time.case", tm)
		mustInsertLogs(t, s, e)
		got, _, err := s.ListLogs(ctx, app.ID, storage.LogQuery{Start: tm, End: tm})
		if err != nil {
			t.Fatalf("ListLogs: %v", err)
		}
		wantSame(t, fmt.Sprintf("ListLogs at %v", tm), []storage.LogEntry{e}, got)
	}
}

// moreRecords is what an app holds of the kinds beyond populate's.
type moreRecords struct {
	o     owners
	vars  map[[2]string][]storage.Variable
	files []storage.File
	rules []storage.Rule
	logs  []storage.LogEntry
}

func populateMore(t *testing.T, s storage.Store, accountID, name string, files, rules, logs int) moreRecords {
	t.Helper()
	m := moreRecords{o: makeOwners(t, s, accountID, name)}
	m.vars = seedVariables(t, s, m.o)
	for i := range files {
		m.files = append(m.files, mustCreateFile(t, s, fullFile(m.o.app.ID, fmt.Sprintf("file%d.bin", i))))
	}
	for i := range rules {
		m.rules = append(m.rules, fullRule(m.o.app.ID, ruleHWID, blacklist, fmt.Sprintf("HW-%d", i)))
	}
	mustCreateRules(t, s, m.rules...)
	for i := range logs {
		m.logs = append(m.logs, fullLog(m.o.app.ID, "user.login", levelInfo, "u", ms(time.Duration(i)*time.Minute)))
	}
	mustInsertLogs(t, s, m.logs...)
	return m
}

// moreCounts counts, through the contract, what populateMore made.
type moreCounts struct {
	AppVars, UserVars, LicenseVars, Files, Rules, Logs int
}

func countMore(t *testing.T, s storage.Store, o owners) moreCounts {
	t.Helper()
	ctx := t.Context()
	var c moreCounts
	for _, f := range []struct {
		scope, owner string
		n            *int
	}{{storage.ScopeApp, "", &c.AppVars}, {storage.ScopeUser, o.user.ID, &c.UserVars}, {storage.ScopeLicense, o.lic.ID, &c.LicenseVars}} {
		vs, err := s.ListVariables(ctx, o.app.ID, f.scope, f.owner)
		if err != nil {
			t.Fatalf("ListVariables: %v", err)
		}
		*f.n = len(vs)
	}
	files, err := s.ListFiles(ctx, o.app.ID)
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	rules, err := s.ListRules(ctx, o.app.ID, storage.RuleQuery{})
	if err != nil {
		t.Fatalf("ListRules: %v", err)
	}
	if c.Logs, err = s.CountLogs(ctx, o.app.ID, "", time.Time{}); err != nil {
		t.Fatalf("CountLogs: %v", err)
	}
	c.Files, c.Rules = len(files), len(rules)
	return c
}

func (m moreRecords) counts() moreCounts {
	return moreCounts{AppVars: 2, UserVars: 2, LicenseVars: 2, Files: len(m.files), Rules: len(m.rules), Logs: len(m.logs)}
}

// testAppDeleteCascadeMore deletes an app holding variables of every scope, files, rules and
// log entries: all of them go, and an app next to it keeps its own.
func testAppDeleteCascadeMore(t *testing.T, s storage.Store) {
	ctx := t.Context()
	doomed := populateMore(t, s, "acc-1", "Doomed", 3, 4, 25)
	kept := populateMore(t, s, "acc-1", "Kept", 2, 5, 30)
	otherAccount := populateMore(t, s, "acc-2", "Doomed", 1, 1, 1)
	if got := countMore(t, s, doomed.o); got != doomed.counts() {
		t.Fatalf("records of the doomed app before DeleteApp = %+v, want %+v", got, doomed.counts())
	}

	if err := s.DeleteApp(ctx, "acc-1", doomed.o.app.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	if got := countMore(t, s, doomed.o); got != (moreCounts{}) {
		t.Errorf("records of the deleted app = %+v, want none", got)
	}
	if c, err := s.CountAppRecords(ctx, doomed.o.app.ID); err != nil || c != (storage.AppCounts{}) {
		t.Errorf("CountAppRecords(deleted app) = (%+v, %v), want all zero", c, err)
	}
	if names, err := s.LogEvents(ctx, doomed.o.app.ID); err != nil || len(names) != 0 {
		t.Errorf("LogEvents(deleted app) = (%v, %v), want none", names, err)
	}
	_, err := s.GetFile(ctx, doomed.o.app.ID, doomed.files[0].ID)
	wantNotFound(t, "GetFile of the deleted app", err)
	_, err = s.GetRule(ctx, doomed.o.app.ID, doomed.rules[0].ID)
	wantNotFound(t, "GetRule of the deleted app", err)
	_, err = s.GetVariableByKey(ctx, doomed.o.app.ID, storage.ScopeApp, "", "k1")
	wantNotFound(t, "GetVariableByKey of the deleted app", err)

	for _, m := range []moreRecords{kept, otherAccount} {
		if got := countMore(t, s, m.o); got != m.counts() {
			t.Errorf("records of %s after deleting another app = %+v, want %+v", m.o.app.Name, got, m.counts())
		}
		for sc, vs := range m.vars {
			wantVariables(t, s, m.o.app.ID, sc[0], sc[1], vs...)
		}
		for _, f := range m.files {
			wantFile(t, s, f)
		}
		for _, r := range m.rules {
			wantRule(t, s, r)
		}
	}

	// The app created again under the same id starts empty, and every id is free again.
	mustCreateApp(t, s, doomed.o.app)
	if got := countMore(t, s, doomed.o); got != (moreCounts{}) {
		t.Errorf("records of the re-created app = %+v, want none", got)
	}
	mustCreateVariables(t, s, doomed.vars[[2]string{storage.ScopeApp, ""}]...)
	mustCreateFile(t, s, doomed.files[0])
	mustCreateRules(t, s, doomed.rules...)
	mustInsertLogs(t, s, doomed.logs...)
}

func testAppCountRecordsMore(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := populateMore(t, s, "acc-1", "counted", 3, 4, 10)
	b := populateMore(t, s, "acc-1", "neighbour", 1, 6, 2)
	// More variables of users and licenses: SPEC 4.2 counts the app's own only.
	mustCreateVariables(t, s, fullVariable(a.o.app.ID, storage.ScopeApp, "", "k3"),
		fullVariable(a.o.app.ID, storage.ScopeUser, a.o.user.ID, "k3"),
		fullVariable(a.o.app.ID, storage.ScopeLicense, a.o.lic.ID, "k3"))

	for _, c := range []struct {
		app  string
		want storage.AppCounts
	}{
		{a.o.app.ID, storage.AppCounts{Users: 1, Licenses: 1, Variables: 3, Files: 3, Rules: 4}},
		{b.o.app.ID, storage.AppCounts{Users: 1, Licenses: 1, Variables: 2, Files: 1, Rules: 6}},
		{"no-such-app", storage.AppCounts{}},
	} {
		got, err := s.CountAppRecords(ctx, c.app)
		if err != nil {
			t.Fatalf("CountAppRecords(%s): %v", c.app, err)
		}
		if got != c.want {
			t.Errorf("CountAppRecords(%s) = %+v, want %+v", c.app, got, c.want)
		}
	}

	// The counts follow deletions.
	if err := s.DeleteVariable(ctx, a.o.app.ID, a.vars[[2]string{storage.ScopeApp, ""}][0].ID); err != nil {
		t.Fatalf("DeleteVariable: %v", err)
	}
	if err := s.DeleteFile(ctx, a.o.app.ID, a.files[0].ID); err != nil {
		t.Fatalf("DeleteFile: %v", err)
	}
	if err := s.DeleteRule(ctx, a.o.app.ID, a.rules[0].ID); err != nil {
		t.Fatalf("DeleteRule: %v", err)
	}
	got, err := s.CountAppRecords(ctx, a.o.app.ID)
	if err != nil {
		t.Fatalf("CountAppRecords: %v", err)
	}
	if want := (storage.AppCounts{Users: 1, Licenses: 1, Variables: 2, Files: 2, Rules: 3}); got != want {
		t.Errorf("CountAppRecords after deletes = %+v, want %+v", got, want)
	}
}
