package clustertest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

// getValue calls GetValue and fails the test on an error.
func getValue(t *testing.T, e cluster.Engine, key string) ([]byte, time.Duration, bool) {
	t.Helper()
	v, ttl, ok, err := e.GetValue(ctxT(t), key)
	if err != nil {
		t.Fatalf("GetValue(%q): %v", key, err)
	}
	if !ok && (v != nil || ttl != 0) {
		t.Errorf("GetValue(%q) not ok but answered %q, %v", key, v, ttl)
	}
	return v, ttl, ok
}

func setValue(t *testing.T, e cluster.Engine, key string, v []byte, ttl time.Duration) {
	t.Helper()
	if err := e.SetValue(ctxT(t), key, v, ttl); err != nil {
		t.Fatalf("SetValue(%q, ttl %v): %v", key, ttl, err)
	}
}

// testValuesSetGetDelete: a value reads back byte for byte with how long it has left, a
// delete says whether the key existed, and neither the stored nor the answered bytes are
// shared with the caller.
func testValuesSetGetDelete(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	if _, _, ok := getValue(t, e, "session:missing"); ok {
		t.Fatal("GetValue(missing) ok")
	}
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for i, want := range [][]byte{[]byte(`{"user":"u1"}`), {}, []byte("ключ\x00\xff{}*\n"), big} {
		key := fmt.Sprintf("session:%d", i)
		before := time.Now()
		setValue(t, e, key, want, time.Minute)
		got, ttl, ok := getValue(t, e, key)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("GetValue(%q) = %q (len %d), ok %v; want %q (len %d)", key, trunc(got), len(got), ok, trunc(want), len(want))
		}
		// Engines keep milliseconds: a millisecond of rounding either way.
		if least := time.Minute - time.Since(before) - time.Millisecond; ttl > time.Minute || ttl < least {
			t.Errorf("GetValue(%q) ttl = %v, want in [%v, %v]", key, ttl, least, time.Minute)
		}
	}

	// The engine keeps its own copy, and answers one the caller may modify.
	in := []byte("original")
	setValue(t, e, "copy", in, time.Minute)
	copy(in, "XXXXXXXX")
	got, _, _ := getValue(t, e, "copy")
	if string(got) != "original" {
		t.Fatalf("GetValue after the caller changed its slice = %q, want original", got)
	}
	copy(got, "YYYYYYYY")
	if got, _, _ := getValue(t, e, "copy"); string(got) != "original" {
		t.Fatalf("GetValue after the caller changed an answer = %q, want original", got)
	}

	if ok, err := e.DeleteValue(ctx, "session:0"); err != nil || !ok {
		t.Fatalf("DeleteValue(existing) = %v, %v; want true", ok, err)
	}
	if _, _, ok := getValue(t, e, "session:0"); ok {
		t.Fatal("GetValue after DeleteValue ok")
	}
	if ok, err := e.DeleteValue(ctx, "session:0"); err != nil || ok {
		t.Fatalf("second DeleteValue = %v, %v; want false", ok, err)
	}
	if ok, err := e.DeleteValue(ctx, "session:missing"); err != nil || ok {
		t.Fatalf("DeleteValue(missing) = %v, %v; want false", ok, err)
	}
	if _, _, ok := getValue(t, e, "session:1"); !ok {
		t.Fatal("DeleteValue removed another key")
	}
}

func trunc(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// testValuesExpiry: a value is answered, with at most its ttl left, until the ttl runs out;
// then it is absent for every method.
func testValuesExpiry(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	ttl := 300 * time.Millisecond
	start := time.Now()
	setValue(t, e, "short", []byte("v"), ttl)
	setValue(t, e, "short-touch", []byte("v"), ttl)
	setValue(t, e, "short-delete", []byte("v"), ttl)
	setValue(t, e, "long", []byte("v"), time.Minute)
	_, left, ok := getValue(t, e, "short")
	if elapsed := time.Since(start); elapsed < ttl-margin {
		if !ok {
			t.Fatal("GetValue before the ttl ran out: not ok")
		}
		if least := ttl - elapsed - time.Millisecond; left <= 0 || left > ttl || left < least {
			t.Errorf("GetValue ttl = %v, want in [%v, %v]", left, least, ttl)
		}
	} else {
		t.Logf("machine too slow to check a value inside a %v ttl; skipped", ttl)
	}
	sleepUntil(time.Now().Add(ttl + margin))
	if v, _, ok := getValue(t, e, "short"); ok {
		t.Fatalf("GetValue after the ttl = %q, ok; want absent", v)
	}
	if ok, err := e.TouchValue(ctx, "short-touch", time.Minute); err != nil || ok {
		t.Fatalf("TouchValue after the ttl = %v, %v; want false", ok, err)
	}
	if ok, err := e.DeleteValue(ctx, "short-delete"); err != nil || ok {
		t.Fatalf("DeleteValue after the ttl = %v, %v; want false (it did not exist any more)", ok, err)
	}
	if _, _, ok := getValue(t, e, "long"); !ok {
		t.Fatal("GetValue of the long-lived key: not ok")
	}
}

// testValuesTouch: a touch sets the remaining time, longer or shorter, from now.
func testValuesTouch(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	ttl := 300 * time.Millisecond
	start := time.Now()
	setValue(t, e, "k", []byte("v"), ttl)
	time.Sleep(ttl / 2)
	ok, err := e.TouchValue(ctx, "k", time.Minute)
	if err != nil {
		t.Fatalf("TouchValue: %v", err)
	}
	if time.Since(start) >= ttl-margin/2 {
		t.Skipf("machine too slow to touch a value inside a %v ttl; skipped", ttl)
	}
	if !ok {
		t.Fatal("TouchValue of a live key = false")
	}
	sleepUntil(start.Add(ttl + margin))
	v, left, ok := getValue(t, e, "k")
	if !ok || string(v) != "v" {
		t.Fatalf("GetValue after the first ttl = %q, %v; want v (touched)", v, ok)
	}
	if left <= 30*time.Second || left > time.Minute {
		t.Errorf("GetValue ttl after touching to 1m = %v", left)
	}
	// Shorter works too.
	short := 200 * time.Millisecond
	if ok, err := e.TouchValue(ctx, "k", short); err != nil || !ok {
		t.Fatalf("TouchValue(shorter) = %v, %v", ok, err)
	}
	if _, left, ok := getValue(t, e, "k"); ok && left > short {
		t.Errorf("GetValue ttl after touching to %v = %v", short, left)
	}
	sleepUntil(time.Now().Add(short + margin))
	if _, _, ok := getValue(t, e, "k"); ok {
		t.Fatal("GetValue after the shortened ttl: still there")
	}
}

// testValuesTouchDoesNotRevive: touching an absent or expired key answers false and leaves
// it absent.
func testValuesTouchDoesNotRevive(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	if ok, err := e.TouchValue(ctx, "missing", time.Minute); err != nil || ok {
		t.Fatalf("TouchValue(missing) = %v, %v; want false", ok, err)
	}
	if _, _, ok := getValue(t, e, "missing"); ok {
		t.Fatal("TouchValue created a missing key")
	}
	ttl := 200 * time.Millisecond
	setValue(t, e, "k", []byte("v"), ttl)
	sleepUntil(time.Now().Add(ttl + margin))
	if ok, err := e.TouchValue(ctx, "k", time.Minute); err != nil || ok {
		t.Fatalf("TouchValue(expired) = %v, %v; want false", ok, err)
	}
	if v, _, ok := getValue(t, e, "k"); ok {
		t.Fatalf("GetValue after touching an expired key = %q; want absent (not revived)", v)
	}
	// A deleted key is not revived either.
	setValue(t, e, "d", []byte("v"), time.Minute)
	if ok, err := e.DeleteValue(ctx, "d"); err != nil || !ok {
		t.Fatalf("DeleteValue = %v, %v", ok, err)
	}
	if ok, err := e.TouchValue(ctx, "d", time.Minute); err != nil || ok {
		t.Fatalf("TouchValue(deleted) = %v, %v; want false", ok, err)
	}
}

// testValuesReplace: a second SetValue replaces both the value and the ttl.
func testValuesReplace(t *testing.T, e cluster.Engine) {
	setValue(t, e, "k", []byte("old"), 200*time.Millisecond)
	setValue(t, e, "k", []byte("new"), time.Minute)
	time.Sleep(200*time.Millisecond + margin)
	if v, _, ok := getValue(t, e, "k"); !ok || string(v) != "new" {
		t.Fatalf("GetValue = %q, %v; want new (value and ttl replaced)", v, ok)
	}
	setValue(t, e, "k", []byte("short"), 200*time.Millisecond)
	time.Sleep(200*time.Millisecond + margin)
	if v, _, ok := getValue(t, e, "k"); ok {
		t.Fatalf("GetValue = %q; want absent (the shorter ttl replaced the longer)", v)
	}
}
