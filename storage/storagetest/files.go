package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var fileTests = []subtest{
	{"FileRoundTrip", testFileRoundTrip},
	{"FileConflictAndUnknownApp", testFileConflictAndUnknownApp},
	{"FileLatest", testFileLatest},
	{"FileScopedToApp", testFileScopedToApp},
	{"FileUpdate", testFileUpdate},
	{"FileDelete", testFileDelete},
}

var ruleTests = []subtest{
	{"RuleRoundTrip", testRuleRoundTrip},
	{"RuleConflict", testRuleConflict},
	{"RuleUnknownApp", testRuleUnknownApp},
	{"RuleListFilters", testRuleListFilters},
	{"RuleScopedToApp", testRuleScopedToApp},
	{"RuleUpdate", testRuleUpdate},
	{"RuleDelete", testRuleDelete},
}

// Rule types and actions of SPEC 2 (the caller validates them; engines store strings).
const (
	ruleIP      = "ip"
	ruleHWID    = "hwid"
	ruleCountry = "country"
	blacklist   = "blacklist"
	whitelist   = "whitelist"
)

func fullFile(appID, name string) storage.File {
	n := seq.Add(1)
	return storage.File{
		ID:          fmt.Sprintf("file-%05d", n),
		AppID:       appID,
		Name:        name,
		Version:     fmt.Sprintf("2.%d.1", n),
		Size:        1<<33 + n, // beyond 32 bits
		SHA256:      fmt.Sprintf("%064x", 0xf11e000+n),
		BlobKey:     fmt.Sprintf("apps/%s/files/%d", appID, n),
		ContentType: "application/x-msdownload",
		CreatedAt:   ms(-8 * 24 * time.Hour),
		UpdatedAt:   ms(-45*time.Minute + 21*time.Millisecond),
	}
}

func minimalFile(appID, name string) storage.File {
	return storage.File{ID: uniq("file-min-"), AppID: appID, Name: name}
}

func mustCreateFile(t *testing.T, s storage.Store, f storage.File) storage.File {
	t.Helper()
	if err := s.CreateFile(t.Context(), f); err != nil {
		t.Fatalf("CreateFile(%q): %v", f.Name, err)
	}
	return f
}

func wantFile(t *testing.T, s storage.Store, want storage.File) {
	t.Helper()
	got, err := s.GetFile(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetFile(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetFile(%q) differs: %s", want.ID, d)
	}
}

func fileCreated(f storage.File) time.Time { return f.CreatedAt }

func testFileRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	full := mustCreateFile(t, s, fullFile(app.ID, "Setup.exe"))
	bare := mustCreateFile(t, s, minimalFile(app.ID, "bare"))
	wantFile(t, s, full)
	wantFile(t, s, bare)
	list, err := s.ListFiles(ctx, app.ID)
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	// The bare file's zero CreatedAt sorts last, newest first.
	wantSame(t, "ListFiles", []storage.File{full, bare}, list)
	empty := mustCreateApp(t, s, fullApp("acc-1", "empty"))
	if list, err := s.ListFiles(ctx, empty.ID); err != nil || len(list) != 0 {
		t.Errorf("ListFiles(app without files) = (%v, %v), want none", recIDs(list), err)
	}
}

func testFileConflictAndUnknownApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	f := mustCreateFile(t, s, fullFile(app.ID, "a.bin"))

	sameID := fullFile(other.ID, "b.bin")
	sameID.ID = f.ID
	wantConflict(t, "CreateFile with a taken id (in another app)", s.CreateFile(ctx, sameID))
	wantConflict(t, "CreateFile of an identical file", s.CreateFile(ctx, f))
	orphan := fullFile("no-such-app", "orphan.bin")
	wantNotFound(t, "CreateFile for an unknown app", s.CreateFile(ctx, orphan))
	_, err := s.GetFile(ctx, orphan.AppID, orphan.ID)
	wantNotFound(t, "GetFile of a refused file", err)
	if list, err := s.ListFiles(ctx, other.ID); err != nil || len(list) != 0 {
		t.Errorf("ListFiles(other) after refused creates = (%v, %v), want none", recIDs(list), err)
	}
	wantFile(t, s, f)
	// Names repeat freely: several versions of one file.
	g := fullFile(app.ID, f.Name)
	mustCreateFile(t, s, g)
	list, err := s.ListFiles(ctx, app.ID)
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	wantSame(t, "ListFiles", newestFirst([]storage.File{f, g}, fileCreated), list)
}

func testFileLatest(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	mk := func(appID, name string, age time.Duration) storage.File {
		f := fullFile(appID, name)
		f.CreatedAt = ms(age)
		return mustCreateFile(t, s, f)
	}
	mk(app.ID, "loader.exe", -3*time.Hour)
	loaderTieLow := mk(app.ID, "loader.exe", -time.Hour)
	loaderTieHigh := mk(app.ID, "loader.exe", -time.Hour) // same instant, larger id: newer
	mk(app.ID, "loader.exe", -2*time.Hour)
	readme := mk(app.ID, "README", -30*time.Minute)
	mk(app.ID, "Loader.exe", time.Hour)             // another name (names are exact)
	newest := mk(app.ID, "zz-notes.txt", time.Hour) // the same instant, larger id: the app's newest
	mk(other.ID, "loader.exe", 24*time.Hour)
	noTime := mustCreateFile(t, s, minimalFile(app.ID, "never"))

	if loaderTieHigh.ID < loaderTieLow.ID {
		t.Fatalf("fixture ids are not increasing: %q, %q", loaderTieLow.ID, loaderTieHigh.ID)
	}
	for _, c := range []struct {
		name string
		want storage.File
	}{
		{"loader.exe", loaderTieHigh},
		{"README", readme},
		{"never", noTime},
	} {
		got, err := s.LatestFile(ctx, app.ID, c.name)
		if err != nil {
			t.Fatalf("LatestFile(%q): %v", c.name, err)
		}
		if d := diff(c.want, got); d != "" {
			t.Errorf("LatestFile(%q) = %s, want %s: %s", c.name, got.ID, c.want.ID, d)
		}
	}
	got, err := s.LatestFile(ctx, app.ID, "")
	if err != nil {
		t.Fatalf("LatestFile(whole app): %v", err)
	}
	if d := diff(newest, got); d != "" {
		t.Errorf("LatestFile(whole app) = %s, want %s: %s", got.ID, newest.ID, d)
	}
	for _, name := range []string{"LOADER.EXE", "loader", "missing"} {
		_, err := s.LatestFile(ctx, app.ID, name)
		wantNotFound(t, fmt.Sprintf("LatestFile(%q)", name), err)
	}
	empty := mustCreateApp(t, s, fullApp("acc-1", "empty"))
	_, err = s.LatestFile(ctx, empty.ID, "")
	wantNotFound(t, "LatestFile(app without files)", err)
	_, err = s.LatestFile(ctx, empty.ID, "loader.exe")
	wantNotFound(t, "LatestFile(app without files, name)", err)

	// The newest going makes the one before it the latest.
	if err := s.DeleteFile(ctx, app.ID, loaderTieHigh.ID); err != nil {
		t.Fatalf("DeleteFile: %v", err)
	}
	if got, err := s.LatestFile(ctx, app.ID, "loader.exe"); err != nil || got.ID != loaderTieLow.ID {
		t.Errorf("LatestFile after deleting the newest = (%s, %v), want %s", got.ID, err, loaderTieLow.ID)
	}
}

func mustListFiles(t *testing.T, s storage.Store, appID string) []storage.File {
	t.Helper()
	list, err := s.ListFiles(t.Context(), appID)
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	return list
}

func testFileScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	var mine []storage.File
	for i := range 5 {
		f := fullFile(app.ID, "f")
		f.CreatedAt = ms(time.Duration(i%3) * time.Minute) // ties, broken by id
		mine = append(mine, mustCreateFile(t, s, f))
	}
	f := mine[0]
	_, err := s.GetFile(ctx, other.ID, f.ID)
	wantNotFound(t, "GetFile from another app", err)
	_, err = s.LatestFile(ctx, other.ID, "")
	wantNotFound(t, "LatestFile of another app", err)
	if list := mustListFiles(t, s, other.ID); len(list) != 0 {
		t.Errorf("ListFiles(another app) = %v, want none", recIDs(list))
	}
	_, err = s.UpdateFile(ctx, other.ID, f.ID, func(*storage.File) error {
		t.Error("UpdateFile called fn for a file of another app")
		return nil
	})
	wantNotFound(t, "UpdateFile from another app", err)
	wantNotFound(t, "DeleteFile from another app", s.DeleteFile(ctx, other.ID, f.ID))
	_, err = s.UpdateFile(ctx, app.ID, "missing", func(*storage.File) error {
		t.Error("UpdateFile called fn for a missing file")
		return nil
	})
	wantNotFound(t, "UpdateFile(missing)", err)
	wantSame(t, "ListFiles", newestFirst(mine, fileCreated), mustListFiles(t, s, app.ID))
}

func testFileUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	f := mustCreateFile(t, s, minimalFile(app.ID, "before"))
	bystander := mustCreateFile(t, s, fullFile(app.ID, "bystander"))

	want := fullFile(app.ID, "after")
	want.ID, want.CreatedAt = f.ID, f.CreatedAt
	got, err := s.UpdateFile(ctx, app.ID, f.ID, func(x *storage.File) error {
		if d := diff(f, *x); d != "" {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateFile: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateFile result differs: %s", d)
	}
	wantFile(t, s, want)
	wantFile(t, s, bystander)
	if latest, err := s.LatestFile(ctx, app.ID, "after"); err != nil || latest.ID != f.ID {
		t.Errorf("LatestFile(new name) = (%s, %v), want %s", latest.ID, err, f.ID)
	}
	_, err = s.LatestFile(ctx, app.ID, "before")
	wantNotFound(t, "LatestFile(old name)", err)

	got, err = s.UpdateFile(ctx, app.ID, f.ID, func(x *storage.File) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", "other-app", ms(time.Hour)
		x.Version = "kept the rest"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateFile: %v", err)
	}
	want.Version = "kept the rest"
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateFile changing identity: result differs: %s", d)
	}
	wantFile(t, s, want)

	zero := storage.File{ID: f.ID, AppID: app.ID}
	if got, err = s.UpdateFile(ctx, app.ID, f.ID, func(x *storage.File) error { *x = zero; return nil }); err != nil {
		t.Fatalf("UpdateFile to zero values: %v", err)
	}
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateFile (zero values) result differs: %s", d)
	}
	wantFile(t, s, zero)

	errBoom := errors.New("boom")
	_, err = s.UpdateFile(ctx, app.ID, f.ID, func(x *storage.File) error {
		x.Name = "never"
		return errBoom
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateFile with a failing fn: error = %v, want fn's error only", err)
	}
	wantFile(t, s, zero)
}

func testFileDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	f := mustCreateFile(t, s, fullFile(app.ID, "one"))
	g := mustCreateFile(t, s, fullFile(app.ID, "two"))
	if err := s.DeleteFile(ctx, app.ID, f.ID); err != nil {
		t.Fatalf("DeleteFile: %v", err)
	}
	_, err := s.GetFile(ctx, app.ID, f.ID)
	wantNotFound(t, "GetFile after DeleteFile", err)
	_, err = s.LatestFile(ctx, app.ID, "one")
	wantNotFound(t, "LatestFile after DeleteFile", err)
	wantNotFound(t, "second DeleteFile", s.DeleteFile(ctx, app.ID, f.ID))
	wantSame(t, "ListFiles", []storage.File{g}, mustListFiles(t, s, app.ID))
	mustCreateFile(t, s, f) // the id is free again
}

func fullRule(appID, typ, action, value string) storage.Rule {
	n := seq.Add(1)
	return storage.Rule{
		ID:        fmt.Sprintf("rule-%05d", n),
		AppID:     appID,
		Type:      typ,
		Action:    action,
		Value:     value,
		Note:      fmt.Sprintf("note %d on %s", n, value),
		Enabled:   true,
		CreatedAt: ms(-7 * 24 * time.Hour),
		UpdatedAt: ms(-20*time.Minute + 17*time.Millisecond),
	}
}

func minimalRule(appID, typ, action, value string) storage.Rule {
	return storage.Rule{ID: uniq("rule-min-"), AppID: appID, Type: typ, Action: action, Value: value}
}

func mustCreateRules(t *testing.T, s storage.Store, rs ...storage.Rule) []storage.Rule {
	t.Helper()
	if err := s.CreateRules(t.Context(), rs); err != nil {
		t.Fatalf("CreateRules(%d rules): %v", len(rs), err)
	}
	return rs
}

func wantRule(t *testing.T, s storage.Store, want storage.Rule) {
	t.Helper()
	got, err := s.GetRule(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetRule(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetRule(%q) differs: %s", want.ID, d)
	}
}

func mustListRules(t *testing.T, s storage.Store, appID string, q storage.RuleQuery) []storage.Rule {
	t.Helper()
	list, err := s.ListRules(t.Context(), appID, q)
	if err != nil {
		t.Fatalf("ListRules(%+v): %v", q, err)
	}
	return list
}

func oldestFirst(rs []storage.Rule) []storage.Rule {
	return ordered(rs, func(a, b storage.Rule) int { return a.CreatedAt.Compare(b.CreatedAt) }, false)
}

func testRuleRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	full := fullRule(app.ID, ruleCountry, whitelist, "DE")
	bare := minimalRule(app.ID, ruleIP, blacklist, "203.0.113.0/24")
	mustCreateRules(t, s, full, bare)
	wantRule(t, s, full)
	wantRule(t, s, bare)
	// The bare rule's zero CreatedAt sorts first, oldest first.
	wantSame(t, "ListRules", []storage.Rule{bare, full}, mustListRules(t, s, app.ID, storage.RuleQuery{}))
	if err := s.CreateRules(ctx, nil); err != nil {
		t.Errorf("CreateRules(nil): %v", err)
	}
}

func testRuleConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	first := mustCreateRules(t, s, fullRule(app.ID, ruleIP, blacklist, "198.51.100.1"))[0]
	second := mustCreateRules(t, s, fullRule(app.ID, ruleIP, blacklist, "198.51.100.2"))[0]

	sameID := fullRule(other.ID, ruleHWID, whitelist, "HW")
	sameID.ID = first.ID
	batch := func(at int, r storage.Rule) []storage.Rule {
		var rs []storage.Rule
		for i := range 40 {
			rs = append(rs, fullRule(app.ID, ruleHWID, blacklist, fmt.Sprintf("%s-%d", uniq("HW"), i)))
		}
		rs[at] = r
		return rs
	}
	dup := batch(39, fullRule(app.ID, ruleCountry, blacklist, "RU"))
	dup[3] = fullRule(app.ID, ruleCountry, blacklist, "RU")
	for name, rs := range map[string][]storage.Rule{
		"the same type, action and value": {fullRule(app.ID, ruleIP, blacklist, "198.51.100.1")},
		"a taken id (in another app)":     {sameID},
		"an identical rule":               {first},
		"a taken rule in a batch":         batch(20, fullRule(app.ID, ruleIP, blacklist, "198.51.100.2")),
		"a rule twice in a batch":         dup,
	} {
		wantConflict(t, "CreateRules with "+name, s.CreateRules(ctx, rs))
		wantSame(t, "ListRules after a refused create", []storage.Rule{first, second}, mustListRules(t, s, app.ID, storage.RuleQuery{}))
	}
	if list := mustListRules(t, s, other.ID, storage.RuleQuery{}); len(list) != 0 {
		t.Errorf("ListRules(other) after a refused create = %v, want none", recIDs(list))
	}

	// A rule differing in type, action or value only, or of another app, is another rule.
	mustCreateRules(t, s,
		fullRule(app.ID, ruleIP, whitelist, "198.51.100.1"),
		fullRule(app.ID, ruleHWID, blacklist, "198.51.100.1"),
		fullRule(app.ID, ruleIP, blacklist, "198.51.100.10"),
		fullRule(other.ID, ruleIP, blacklist, "198.51.100.1"))

	_, err := s.UpdateRule(ctx, app.ID, second.ID, func(r *storage.Rule) error { r.Value = "198.51.100.1"; return nil })
	wantConflict(t, "UpdateRule onto a taken rule", err)
	wantRule(t, s, second)
	if _, err := s.UpdateRule(ctx, app.ID, second.ID, func(r *storage.Rule) error { r.Action = whitelist; r.Value = "x"; return nil }); err != nil {
		t.Fatalf("UpdateRule to a free rule: %v", err)
	}
	mustCreateRules(t, s, fullRule(app.ID, ruleIP, blacklist, "198.51.100.2"))
}

func testRuleUnknownApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	good := fullRule(app.ID, ruleIP, blacklist, "192.0.2.1")
	orphan := fullRule("no-such-app", ruleIP, blacklist, "192.0.2.1")
	wantNotFound(t, "CreateRules for an unknown app", s.CreateRules(ctx, []storage.Rule{orphan}))
	wantNotFound(t, "CreateRules with one rule of an unknown app", s.CreateRules(ctx, []storage.Rule{good, orphan}))
	for _, r := range []storage.Rule{good, orphan} {
		_, err := s.GetRule(ctx, r.AppID, r.ID)
		wantNotFound(t, "GetRule of a refused rule", err)
	}
	mustCreateRules(t, s, good)
	wantRule(t, s, good)
}

func testRuleListFilters(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	var all []storage.Rule
	i := 0
	for _, typ := range []string{ruleIP, ruleHWID, ruleCountry} {
		for _, action := range []string{blacklist, whitelist} {
			for range 2 {
				r := fullRule(app.ID, typ, action, fmt.Sprintf("v%d", i))
				r.CreatedAt = ms(time.Duration((7*i)%5) * time.Minute) // out of insertion order, with ties
				all = append(all, r)
				i++
			}
		}
	}
	mustCreateRules(t, s, all...)
	mustCreateRules(t, s, fullRule(other.ID, ruleIP, blacklist, "v0"), fullRule(other.ID, ruleHWID, whitelist, "v0"))

	for _, q := range []storage.RuleQuery{
		{},
		{Type: ruleIP}, {Type: ruleHWID}, {Type: ruleCountry},
		{Action: blacklist}, {Action: whitelist},
		{Type: ruleCountry, Action: whitelist}, {Type: ruleIP, Action: blacklist},
		{Type: "asn"},
	} {
		var want []storage.Rule
		for _, r := range all {
			if (q.Type == "" || r.Type == q.Type) && (q.Action == "" || r.Action == q.Action) {
				want = append(want, r)
			}
		}
		wantSame(t, fmt.Sprintf("ListRules(%+v)", q), oldestFirst(want), mustListRules(t, s, app.ID, q))
	}
}

func testRuleScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	r := mustCreateRules(t, s, fullRule(app.ID, ruleIP, blacklist, "192.0.2.9"))[0]
	_, err := s.GetRule(ctx, other.ID, r.ID)
	wantNotFound(t, "GetRule from another app", err)
	if list := mustListRules(t, s, other.ID, storage.RuleQuery{}); len(list) != 0 {
		t.Errorf("ListRules(another app) = %v, want none", recIDs(list))
	}
	_, err = s.UpdateRule(ctx, other.ID, r.ID, func(*storage.Rule) error {
		t.Error("UpdateRule called fn for a rule of another app")
		return nil
	})
	wantNotFound(t, "UpdateRule from another app", err)
	wantNotFound(t, "DeleteRule from another app", s.DeleteRule(ctx, other.ID, r.ID))
	_, err = s.UpdateRule(ctx, app.ID, "missing", func(*storage.Rule) error {
		t.Error("UpdateRule called fn for a missing rule")
		return nil
	})
	wantNotFound(t, "UpdateRule(missing)", err)
	_, err = s.GetRule(ctx, app.ID, "missing")
	wantNotFound(t, "GetRule(missing)", err)
	wantRule(t, s, r)
}

func testRuleUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	r := mustCreateRules(t, s, minimalRule(app.ID, ruleIP, blacklist, "before"))[0]
	bystander := mustCreateRules(t, s, fullRule(app.ID, ruleIP, blacklist, "bystander"))[0]

	want := fullRule(app.ID, ruleCountry, whitelist, "after")
	want.ID, want.CreatedAt = r.ID, r.CreatedAt
	got, err := s.UpdateRule(ctx, app.ID, r.ID, func(x *storage.Rule) error {
		if d := diff(r, *x); d != "" {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateRule: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateRule result differs: %s", d)
	}
	wantRule(t, s, want)
	wantRule(t, s, bystander)
	wantSame(t, "ListRules(country)", []storage.Rule{want}, mustListRules(t, s, app.ID, storage.RuleQuery{Type: ruleCountry}))

	got, err = s.UpdateRule(ctx, app.ID, r.ID, func(x *storage.Rule) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", "other-app", ms(time.Hour)
		x.Enabled, x.Note = false, "kept the rest"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateRule: %v", err)
	}
	want.Enabled, want.Note = false, "kept the rest"
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateRule changing identity: result differs: %s", d)
	}
	wantRule(t, s, want)

	errBoom := errors.New("boom")
	_, err = s.UpdateRule(ctx, app.ID, r.ID, func(x *storage.Rule) error {
		x.Enabled = true
		return errBoom
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateRule with a failing fn: error = %v, want fn's error only", err)
	}
	wantRule(t, s, want)

	// Concurrent toggles and note appends: none is lost.
	const workers = 10
	raceUpdates(t, workers, func(i int) error {
		_, err := s.UpdateRule(ctx, app.ID, r.ID, func(x *storage.Rule) error {
			x.Note += "+"
			x.Enabled = !x.Enabled
			return nil
		})
		return err
	})
	final, err := s.GetRule(ctx, app.ID, r.ID)
	if err != nil {
		t.Fatalf("GetRule: %v", err)
	}
	if wantNote := want.Note + strings.Repeat("+", workers); final.Note != wantNote || final.Enabled != want.Enabled {
		t.Errorf("after %d concurrent updates: note %q enabled %v, want %q %v", workers, final.Note, final.Enabled, wantNote, want.Enabled)
	}
}

func testRuleDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	rs := mustCreateRules(t, s, fullRule(app.ID, ruleHWID, blacklist, "one"), fullRule(app.ID, ruleHWID, blacklist, "two"))
	if err := s.DeleteRule(ctx, app.ID, rs[0].ID); err != nil {
		t.Fatalf("DeleteRule: %v", err)
	}
	_, err := s.GetRule(ctx, app.ID, rs[0].ID)
	wantNotFound(t, "GetRule after DeleteRule", err)
	wantNotFound(t, "second DeleteRule", s.DeleteRule(ctx, app.ID, rs[0].ID))
	wantSame(t, "ListRules", []storage.Rule{rs[1]}, mustListRules(t, s, app.ID, storage.RuleQuery{}))
	// The rule and its id are free again.
	mustCreateRules(t, s, rs[0])
}
