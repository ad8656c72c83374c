package client

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// decodeCases are sessions as stored, and inputs of other shapes that must be answered
// as encoding/json answers them.
func decodeCases(t testing.TB) [][]byte {
	at := time.Date(2026, 11, 28, 14, 5, 41, 123456789, time.UTC)
	full := Session{AppID: "app-1", AccountID: "acc-1", HWID: "hw", IP: "192.0.2.1", Country: "DE", Version: "1.2.3",
		CreatedAt: at, UserID: "user-1", Username: "Jörg", LoginAt: at.Add(time.Minute).In(time.FixedZone("x", 3600)),
		FileKey: "fk", Seat: "seatset", SeatLimit: 7}
	var out [][]byte
	for _, s := range []Session{full, {AppID: "a", AccountID: "b", CreatedAt: at}, {}, {Username: `quote"back\slash`, SeatLimit: -3}} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{
		`{}`, `{"app":"x"}`, `{"APP":"x"}`, `{"app":null}`, `{"app": "x"}`, ` {"app":"x"}`, `{"app":"x",}`,
		`{"app":"x"}{`, `{"seatn":01}`, `{"seatn":-}`, `{"seatn":1.5}`, `{"seatn":1e3}`, `{"seatn":-0}`,
		`{"seatn":99999999999999999999}`, `{"at":"2026-11-28T14:05:41Z"}`, `{"at":"2026-11-28 14:05:41Z"}`,
		`{"at":"bad"}`, `{"other":"x"}`, `{"app":"a","app":"b"}`, "{\"user\":\"\xff\"}", "{\"user\":\"a\tb\"}",
		`{"user":"\u00e9"}`, `{"app":"x"`, `{"app"}`, `{"app":}`, `{`, `[]`, ``, `{"seatn":3,"ip":"1.2.3.4"}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// TestDecodeSessionIsEncodingJSON: the hand-written decoding answers what json.Unmarshal
// answers, for stored sessions and for any other input.
func TestDecodeSessionIsEncodingJSON(t *testing.T) {
	for _, b := range decodeCases(t) {
		checkDecodeSession(t, b)
	}
	// The stored shape is the one decoded by hand (no fallback).
	b, _ := json.Marshal(Session{AppID: "a", AccountID: "b", UserID: "u", Username: "Jörg", CreatedAt: time.Now(), LoginAt: time.Now(), SeatLimit: 2})
	var s Session
	if !decodeSessionFast(b, &s) {
		t.Fatalf("a stored session was not decoded by hand: %s", b)
	}
}

func checkDecodeSession(t *testing.T, b []byte) {
	t.Helper()
	var want, got Session
	wantErr := json.Unmarshal(b, &want)
	gotErr := decodeSession(b, &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: error %v, encoding/json says %v", b, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, encoding/json %+v", b, got, want)
	}
}

func FuzzDecodeSession(f *testing.F) {
	for _, b := range decodeCases(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeSession(t, b) })
}

// BenchmarkDecodeSession: a stored session, by hand and by encoding/json.
func BenchmarkDecodeSession(b *testing.B) {
	at := time.Now()
	raw, _ := json.Marshal(Session{AppID: "0d6c3c1e-4b7e-4d55-9a51-1f0b4f64c0aa", AccountID: "5a1c0f7e-8b1d-4a39-8d8e-2b9e3c7d1f00",
		IP: "127.0.0.1", CreatedAt: at, UserID: "9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0", Username: "user-1", LoginAt: at, FileKey: "k3y"})
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s Session
			if err := decodeSession(raw, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s Session
			if err := json.Unmarshal(raw, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
