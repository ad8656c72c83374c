package storagetest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// WebSocket hooks. Conditions and actions are bytes the engines keep as written: the
// checks compare them with reflect.DeepEqual (through diff), so a nil and an empty slice
// differ. The contract's choice, checked here: no bytes, given as nil or as an empty
// slice, read back as nil on every engine; any other value reads back byte for byte.
var wsHookTests = []subtest{
	{"WSHookRoundTrip", testWSHookRoundTrip},
	{"WSHookBytes", testWSHookBytes},
	{"WSHookScopedToApp", testWSHookScopedToApp},
	{"WSHookListOrder", testWSHookListOrder},
	{"WSHookUpdate", testWSHookUpdate},
	{"WSHookUpdateConcurrent", testWSHookUpdateConcurrent},
	{"WSHookDelete", testWSHookDelete},
	{"WSHookDeletedWithApp", testWSHookDeletedWithApp},
}

// fullWSHook returns a hook of the app with every field set to a distinct non-zero value.
func fullWSHook(appID, name string) storage.WSHook {
	n := seq.Add(1)
	return storage.WSHook{
		ID:          fmt.Sprintf("wsh-%05d", n),
		AppID:       appID,
		Name:        name,
		Event:       "chat_" + name,
		Description: "Answers " + name + " messages — and logs them",
		Conditions:  fmt.Appendf(nil, `[{"field":"data.room","operator":"equals","value":"room-%d"}]`, n),
		Actions:     fmt.Appendf(nil, `[{"type":"respond","message":"hello %s"},{"type":"log","message":"seen"}]`, name),
		Enabled:     true,
		Priority:    int(n % 1000),
		CreatedAt:   ms(-10*24*time.Hour + time.Duration(n)*time.Millisecond),
		UpdatedAt:   ms(-time.Hour + 9*time.Millisecond),
	}
}

// minimalWSHook has only an id and an app: zero times, no conditions or actions, priority 0.
func minimalWSHook(appID string) storage.WSHook {
	return storage.WSHook{ID: uniq("wsh-min-"), AppID: appID}
}

func mustCreateWSHook(t *testing.T, s storage.Store, h storage.WSHook) storage.WSHook {
	t.Helper()
	if err := s.CreateWSHook(t.Context(), h); err != nil {
		t.Fatalf("CreateWSHook(%q): %v", h.ID, err)
	}
	return h
}

func wantWSHook(t *testing.T, s storage.Store, want storage.WSHook) {
	t.Helper()
	got, err := s.GetWSHook(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetWSHook(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetWSHook(%q) differs: %s", want.ID, d)
	}
}

func wantNoWSHook(t *testing.T, s storage.Store, appID, id, why string) {
	t.Helper()
	_, err := s.GetWSHook(t.Context(), appID, id)
	wantNotFound(t, "GetWSHook("+id+") "+why, err)
}

// wsHookOrder is the list order of the contract: priority, then creation time (ordered
// breaks the remaining ties by id).
func wsHookOrder(a, b storage.WSHook) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.CreatedAt.Compare(b.CreatedAt))
}

// wantWSHooks fails unless the app's hooks are exactly want, in the contract's order, and
// CountWSHooks agrees.
func wantWSHooks(t *testing.T, s storage.Store, appID string, want ...storage.WSHook) {
	t.Helper()
	got, err := s.ListWSHooks(t.Context(), appID)
	if err != nil {
		t.Fatalf("ListWSHooks(%s): %v", appID, err)
	}
	wantSame(t, "ListWSHooks("+appID+")", ordered(want, wsHookOrder, false), got)
	n, err := s.CountWSHooks(t.Context(), appID)
	if err != nil {
		t.Fatalf("CountWSHooks(%s): %v", appID, err)
	}
	if n != len(want) {
		t.Errorf("CountWSHooks(%s) = %d, want %d", appID, n, len(want))
	}
}

func testWSHookRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))

	full := fullWSHook(app.ID, "full")
	off := fullWSHook(app.ID, "off")
	off.Enabled, off.Priority, off.Description = false, 999, ""
	minimal := minimalWSHook(app.ID) // zero times, nil conditions and actions
	for _, h := range []storage.WSHook{full, off, minimal} {
		mustCreateWSHook(t, s, h)
		wantWSHook(t, s, h)
	}

	// Empty, non-nil conditions and actions read back as nil, like nil ones.
	empty := minimalWSHook(app.ID)
	empty.Conditions, empty.Actions = []byte{}, []byte{}
	mustCreateWSHook(t, s, empty)
	empty.Conditions, empty.Actions = nil, nil
	wantWSHook(t, s, empty)

	wantWSHooks(t, s, app.ID, full, off, minimal, empty)
	wantWSHooks(t, s, other.ID)
	wantWSHooks(t, s, "no-such-app")

	// An unknown app: ErrNotFound, and nothing written.
	orphan := fullWSHook("no-such-app", "orphan")
	wantNotFound(t, "CreateWSHook under an unknown app", s.CreateWSHook(ctx, orphan))
	wantNoWSHook(t, s, orphan.AppID, orphan.ID, "after a refused CreateWSHook")
	wantWSHooks(t, s, "no-such-app")

	// A taken id, even under another app: ErrConflict, and the stored hook unchanged.
	dup := fullWSHook(other.ID, "dup")
	dup.ID = full.ID
	wantConflict(t, "CreateWSHook with a taken id", s.CreateWSHook(ctx, dup))
	wantWSHook(t, s, full)
	wantWSHooks(t, s, other.ID)
}

// testWSHookBytes writes conditions and actions that a re-encoding, a text conversion or a
// size limit would change: unicode (multi-byte, astral, combining, right-to-left), JSON
// escapes and odd spacing and key order, bytes that are not UTF-8 at all, and ~10 KiB
// values. Each must read back byte for byte, through Get, List and Update.
func testWSHookBytes(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "bytes"))

	unicode := `[{"value":"zoë Ωμέγα 日本語 🎉👩‍👩‍👧 ` + "e\u0301 \u200f" + ` שלום مرحبا","operator":"contains" , "field":"data.msg"}]`
	escapes := "[ {\"type\" :\"respond\",\n\t\"message\":\"quote \\\" slash \\\\ nul \\u0000 \\ud83c\\udf89 <>&\"} ]\n"
	notUTF8 := []byte{0x00, 0xff, 0xfe, '[', 0x80, 0xc3, '\r', '\n', 0xed, 0xa0, 0x80, 0x00}
	large := func(seed string) []byte {
		var b bytes.Buffer
		b.WriteString("[")
		for i := 0; b.Len() < 10*1024; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"type":"send_message","message":"%s %04d ✓ ünïcödé 🎉"}`, seed, i)
		}
		b.WriteString("]")
		return b.Bytes()
	}
	cases := []struct {
		name                string
		conditions, actions []byte
	}{
		{"unicode", []byte(unicode), []byte(escapes)},
		{"not utf-8", notUTF8, bytes.Repeat(notUTF8, 3)},
		{"large", large("cond"), large("act")},
		{"one byte", []byte("["), []byte{0}},
	}
	var all []storage.WSHook
	for _, c := range cases {
		h := fullWSHook(app.ID, "bytes")
		h.Conditions, h.Actions = bytes.Clone(c.conditions), bytes.Clone(c.actions)
		mustCreateWSHook(t, s, h)
		wantWSHook(t, s, h)
		all = append(all, h)
	}
	if n := len(all[2].Conditions); n < 10*1024 {
		t.Fatalf("large conditions are %d bytes, want at least 10 KiB", n)
	}
	wantWSHooks(t, s, app.ID, all...)

	// Update writes them again, and swaps them for others byte for byte.
	for i, h := range all {
		next := cases[(i+1)%len(cases)]
		got, err := s.UpdateWSHook(ctx, app.ID, h.ID, func(x *storage.WSHook) error {
			if !bytes.Equal(x.Conditions, h.Conditions) || !bytes.Equal(x.Actions, h.Actions) {
				t.Errorf("UpdateWSHook(%s, case %q): fn got other bytes than stored", h.ID, cases[i].name)
			}
			x.Conditions, x.Actions = bytes.Clone(next.actions), bytes.Clone(next.conditions)
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateWSHook(%s): %v", h.ID, err)
		}
		h.Conditions, h.Actions = bytes.Clone(next.actions), bytes.Clone(next.conditions)
		if d := diff(h, got); d != "" {
			t.Errorf("UpdateWSHook(%s) result differs: %s", h.ID, d)
		}
		wantWSHook(t, s, h)
		all[i] = h
	}
	wantWSHooks(t, s, app.ID, all...)

	// Updating to empty bytes reads back as nil, as on create.
	h := all[0]
	got, err := s.UpdateWSHook(ctx, app.ID, h.ID, func(x *storage.WSHook) error {
		x.Conditions, x.Actions = []byte{}, nil
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateWSHook to no bytes: %v", err)
	}
	h.Conditions, h.Actions = nil, nil
	if d := diff(h, got); d != "" {
		t.Errorf("UpdateWSHook to no bytes: result differs: %s", d)
	}
	wantWSHook(t, s, h)
}

func testWSHookScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	h := mustCreateWSHook(t, s, fullWSHook(app.ID, "mine"))

	_, err := s.GetWSHook(ctx, other.ID, h.ID)
	wantNotFound(t, "GetWSHook from another app", err)
	_, err = s.UpdateWSHook(ctx, other.ID, h.ID, func(*storage.WSHook) error {
		t.Error("UpdateWSHook called fn for a hook of another app")
		return nil
	})
	wantNotFound(t, "UpdateWSHook from another app", err)
	wantNotFound(t, "DeleteWSHook from another app", s.DeleteWSHook(ctx, other.ID, h.ID))
	wantWSHook(t, s, h)
	wantWSHooks(t, s, other.ID)

	_, err = s.GetWSHook(ctx, app.ID, "missing")
	wantNotFound(t, "GetWSHook(missing)", err)
	_, err = s.UpdateWSHook(ctx, app.ID, "missing", func(*storage.WSHook) error {
		t.Error("UpdateWSHook called fn for a missing hook")
		return nil
	})
	wantNotFound(t, "UpdateWSHook(missing)", err)
	wantNotFound(t, "DeleteWSHook(missing)", s.DeleteWSHook(ctx, app.ID, "missing"))
	wantNotFound(t, "DeleteWSHook under an unknown app", s.DeleteWSHook(ctx, "no-such-app", h.ID))
	wantWSHooks(t, s, app.ID, h)
}

// testWSHookListOrder creates hooks out of order: priority decides first (numerically,
// 10 after 9), then the creation time (a zero one first), then the id.
func testWSHookListOrder(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "order"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))

	mk := func(id string, priority int, created time.Time) storage.WSHook {
		h := fullWSHook(app.ID, id)
		h.ID, h.Priority, h.CreatedAt = "wsh-order-"+id, priority, created
		return h
	}
	early, late := ms(-time.Hour), ms(time.Hour)
	hooks := []storage.WSHook{
		mk("k", 999, early),
		mk("c", 10, early),
		mk("b", 9, late),
		mk("f", 0, late),
		mk("e", 0, early),
		mk("z", 0, early), // same priority and time as e: the id decides
		mk("a", 0, early),
		mk("y", 9, time.Time{}), // a zero time comes first within its priority
		mk("m", 500, early.Add(time.Millisecond)),
		mk("n", 500, early),
	}
	for _, h := range hooks {
		mustCreateWSHook(t, s, h)
	}
	theirs := []storage.WSHook{fullWSHook(other.ID, "t1"), fullWSHook(other.ID, "t2")}
	theirs[0].Priority, theirs[1].Priority = 0, 0
	for _, h := range theirs {
		mustCreateWSHook(t, s, h)
	}

	got, err := s.ListWSHooks(t.Context(), app.ID)
	if err != nil {
		t.Fatalf("ListWSHooks: %v", err)
	}
	wantIDs := []string{"a", "e", "z", "f", "y", "b", "c", "n", "m", "k"}
	for i := range wantIDs {
		wantIDs[i] = "wsh-order-" + wantIDs[i]
	}
	if gotIDs := recIDs(got); strings.Join(gotIDs, " ") != strings.Join(wantIDs, " ") {
		t.Fatalf("ListWSHooks order = %v, want %v", gotIDs, wantIDs)
	}
	wantWSHooks(t, s, app.ID, hooks...)
	wantWSHooks(t, s, other.ID, theirs...)

	// A new priority moves a hook in the list.
	if _, err := s.UpdateWSHook(t.Context(), app.ID, "wsh-order-k", func(x *storage.WSHook) error {
		x.Priority = 0
		return nil
	}); err != nil {
		t.Fatalf("UpdateWSHook: %v", err)
	}
	hooks[0].Priority = 0
	wantWSHooks(t, s, app.ID, hooks...)
}

func testWSHookUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	h := mustCreateWSHook(t, s, minimalWSHook(app.ID))
	bystander := mustCreateWSHook(t, s, fullWSHook(app.ID, "bystander"))

	want := fullWSHook(app.ID, "after")
	want.ID, want.CreatedAt = h.ID, h.CreatedAt
	got, err := s.UpdateWSHook(ctx, app.ID, h.ID, func(x *storage.WSHook) error {
		if d := diff(h, *x); d != "" {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateWSHook: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateWSHook result differs: %s", d)
	}
	wantWSHook(t, s, want)
	wantWSHook(t, s, bystander)

	// fn cannot move the hook: id, app and creation time are kept.
	got, err = s.UpdateWSHook(ctx, app.ID, h.ID, func(x *storage.WSHook) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", "other-app", ms(time.Hour)
		x.Description = "moved?"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateWSHook: %v", err)
	}
	want.Description = "moved?"
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateWSHook changing identity: result differs: %s", d)
	}
	wantWSHook(t, s, want)
	wantNoWSHook(t, s, app.ID, "hijacked", "after an update that set the id")
	wantWSHooks(t, s, "other-app")

	zero := storage.WSHook{ID: h.ID, AppID: app.ID}
	got, err = s.UpdateWSHook(ctx, app.ID, h.ID, func(x *storage.WSHook) error { *x = zero; return nil })
	if err != nil {
		t.Fatalf("UpdateWSHook to zero values: %v", err)
	}
	zero.CreatedAt = want.CreatedAt // kept
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateWSHook (zero values) result differs: %s", d)
	}
	wantWSHook(t, s, zero)

	// A failing fn leaves the record as it was, and its error comes back matchable.
	errBoom := errors.New("boom")
	_, err = s.UpdateWSHook(ctx, app.ID, h.ID, func(x *storage.WSHook) error {
		x.Name, x.Enabled, x.Priority = "never", true, 7
		x.Conditions, x.Actions = []byte(`["never"]`), []byte(`["never"]`)
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateWSHook with a failing fn: error = %v, want fn's error only", err)
	}
	wantWSHook(t, s, zero)
	wantWSHooks(t, s, app.ID, zero, bystander)
}

// testWSHookUpdateConcurrent runs many updaters at once: a lost update shows as a missing
// count.
func testWSHookUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	h := mustCreateWSHook(t, s, minimalWSHook(app.ID))
	bystander := mustCreateWSHook(t, s, fullWSHook(app.ID, "bystander"))

	const workers = 20
	raceUpdates(t, workers, func(n int) error {
		_, err := s.UpdateWSHook(ctx, app.ID, h.ID, func(x *storage.WSHook) error {
			x.Priority++
			if n%2 == 0 {
				x.Actions = append(x.Actions, '+')
			}
			return nil
		})
		return err
	})
	got, err := s.GetWSHook(ctx, app.ID, h.ID)
	if err != nil {
		t.Fatalf("GetWSHook: %v", err)
	}
	if got.Priority != workers {
		t.Errorf("Priority = %d after %d concurrent increments, want %d", got.Priority, workers, workers)
	}
	if want := strings.Repeat("+", workers/2); string(got.Actions) != want {
		t.Errorf("Actions = %q, want %q", got.Actions, want)
	}
	wantWSHook(t, s, bystander)
}

func testWSHookDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	doomed := mustCreateWSHook(t, s, fullWSHook(app.ID, "doomed"))
	kept := mustCreateWSHook(t, s, fullWSHook(app.ID, "kept"))
	foreign := mustCreateWSHook(t, s, fullWSHook(other.ID, "foreign"))

	if err := s.DeleteWSHook(ctx, app.ID, doomed.ID); err != nil {
		t.Fatalf("DeleteWSHook: %v", err)
	}
	wantNoWSHook(t, s, app.ID, doomed.ID, "after DeleteWSHook")
	wantNotFound(t, "second DeleteWSHook", s.DeleteWSHook(ctx, app.ID, doomed.ID))
	_, err := s.UpdateWSHook(ctx, app.ID, doomed.ID, func(*storage.WSHook) error {
		t.Error("UpdateWSHook called fn for a deleted hook")
		return nil
	})
	wantNotFound(t, "UpdateWSHook of a deleted hook", err)
	wantWSHooks(t, s, app.ID, kept)
	wantWSHooks(t, s, other.ID, foreign)

	// The id is free again.
	mustCreateWSHook(t, s, doomed)
	wantWSHooks(t, s, app.ID, kept, doomed)
}

func testWSHookDeletedWithApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	doomedApp := mustCreateApp(t, s, fullApp("acc-1", "doomed"))
	keptApp := mustCreateApp(t, s, fullApp("acc-1", "kept"))
	doomed := []storage.WSHook{
		mustCreateWSHook(t, s, fullWSHook(doomedApp.ID, "one")),
		mustCreateWSHook(t, s, fullWSHook(doomedApp.ID, "two")),
		mustCreateWSHook(t, s, minimalWSHook(doomedApp.ID)),
	}
	kept := mustCreateWSHook(t, s, fullWSHook(keptApp.ID, "kept"))

	if err := s.DeleteApp(ctx, "acc-1", doomedApp.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	for _, h := range doomed {
		wantNoWSHook(t, s, h.AppID, h.ID, "after DeleteApp")
	}
	wantWSHooks(t, s, doomedApp.ID)
	wantWSHooks(t, s, keptApp.ID, kept)

	// The app created again under the same id starts empty, and every id is free again.
	mustCreateApp(t, s, doomedApp)
	wantWSHooks(t, s, doomedApp.ID)
	for _, h := range doomed {
		mustCreateWSHook(t, s, h)
		wantWSHook(t, s, h)
	}
	wantWSHooks(t, s, doomedApp.ID, doomed...)
}
