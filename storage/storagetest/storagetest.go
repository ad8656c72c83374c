package storagetest

import (
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// subtest is one named check of the contract, run on its own fresh store.
type subtest struct {
	name string
	run  func(t *testing.T, s storage.Store)
}

// Run runs the whole conformance suite. newStore must return a fresh, empty store for each
// subtest and register whatever cleanup it needs (Close, dropping a database) with
// t.Cleanup; the suite never closes the store itself.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	var tests []subtest
	tests = append(tests, accountTests...)
	tests = append(tests, tokenTests...)
	tests = append(tests, apiKeyTests...)
	tests = append(tests, auditTests...)
	tests = append(tests, auditWithChangeTests...)
	tests = append(tests, auditPartsTests...)
	tests = append(tests, revocationTests...)
	tests = append(tests, ownerSessionTests...)
	tests = append(tests, recoveryCodeTests...)
	tests = append(tests, passkeyTests...)
	tests = append(tests, appTests...)
	tests = append(tests, userTests...)
	tests = append(tests, userBatchTests...)
	tests = append(tests, loginTests...)
	tests = append(tests, clientRoundTests...)
	tests = append(tests, clientSessionEndTests...)
	tests = append(tests, licenseTests...)
	tests = append(tests, deviceTests...)
	tests = append(tests, appTokenTests...)
	tests = append(tests, variableTests...)
	tests = append(tests, fileTests...)
	tests = append(tests, ruleTests...)
	tests = append(tests, logTests...)
	tests = append(tests, logPurgeTests...)
	tests = append(tests, integrationTests...)
	tests = append(tests, deliveryHistoryTests...)
	tests = append(tests, clientSessionTests...)
	tests = append(tests, wsHookTests...)
	tests = append(tests, eventTests...)
	tests = append(tests, commerceTests...)
	tests = append(tests, atomicityTests...)
	tests = append(tests, subtest{"Ping", testPing})

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if s == nil {
				t.Fatal("newStore returned nil")
			}
			tc.run(t, s)
		})
	}
}

func testPing(t *testing.T, s storage.Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// base is a fixed instant with a non-zero millisecond part, so an engine that drops
// milliseconds, or keeps nanoseconds it was never given, fails the round trip.
var base = time.Date(2024, time.March, 5, 10, 11, 12, 345_000_000, time.UTC)

// ms returns base shifted by d, truncated as engines store times.
func ms(d time.Duration) time.Time { return storage.Truncate(base.Add(d)) }

var seq atomic.Int64

// uniq returns a string unique within the test binary, so accounts made by one helper call
// never collide with another's by accident.
func uniq(prefix string) string {
	return fmt.Sprintf("%s%04d", prefix, seq.Add(1))
}

// fullAccount returns an account with every field set to a distinct non-zero value.
// name seeds the username; the email is derived from it.
func fullAccount(name string) storage.Account {
	n := seq.Add(1)
	return storage.Account{
		ID:                fmt.Sprintf("acc-%s-%d", strings.ToLower(name), n),
		Username:          name,
		Email:             name + "@Example.com",
		PasswordHash:      "$argon2id$v=19$m=65536,t=3,p=2$c2FsdA$aGFzaA-" + name,
		Role:              storage.RoleAdmin,
		Plan:              "pro",
		EmailVerified:     true,
		TwoFactorEnabled:  true,
		TwoFactorSecret:   "JBSWY3DPEHPK3PXP" + name,
		TwoFactorPending:  "KRSXG5CTMVRXEZLU" + name,
		TwoFactorLastStep: 57_000_000 + n,
		APIKeyHash:        fmt.Sprintf("%064x", n) + "-" + name,
		APIKeyPrefix:      "kw_live_",
		APIKeyLast4:       fmt.Sprintf("%04d", n%10000),
		TokensValidAfter:  ms(-48 * time.Hour),
		APICallsUsed:      1234 + n,
		APICallsResetAt:   ms(30 * 24 * time.Hour),
		LastLoginAt:       ms(-1*time.Hour + 1*time.Millisecond),
		CreatedAt:         ms(-90 * 24 * time.Hour),
		UpdatedAt:         ms(-2 * time.Hour),
	}
}

// minimalAccount returns an account with only what every account has: everything else,
// times included, is the zero value and must read back as such.
func minimalAccount(name string) storage.Account {
	return storage.Account{
		ID:       uniq("min-"),
		Username: name,
		Email:    name + "@example.org",
	}
}

var timeType = reflect.TypeFor[time.Time]()

// diffAccount describes every field where got differs from want; "" means equal. Times
// are compared as instants, and a non-zero time read back must be in UTC (the contract),
// a zero one must be the zero time.
func diffAccount(want, got storage.Account) string {
	return diffStruct(reflect.ValueOf(want), reflect.ValueOf(got))
}

func diffToken(want, got storage.AccountToken) string {
	return diffStruct(reflect.ValueOf(want), reflect.ValueOf(got))
}

// diff describes every field where got differs from want, like diffAccount, for any record.
func diff[T any](want, got T) string {
	return diffStruct(reflect.ValueOf(want), reflect.ValueOf(got))
}

func diffStruct(w, g reflect.Value) string {
	var diffs []string
	for i := range w.NumField() {
		f := w.Type().Field(i)
		wf, gf := w.Field(i), g.Field(i)
		if f.Type == timeType {
			wt, gt := wf.Interface().(time.Time), gf.Interface().(time.Time)
			switch {
			case wt.IsZero() != gt.IsZero():
				diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", f.Name, gt, wt))
			case !wt.Equal(gt):
				diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v (off by %v)", f.Name, gt, wt, gt.Sub(wt)))
			case !gt.IsZero() && gt.Location() != time.UTC:
				diffs = append(diffs, fmt.Sprintf("%s: got location %v, want UTC", f.Name, gt.Location()))
			}
			continue
		}
		if !reflect.DeepEqual(wf.Interface(), gf.Interface()) {
			diffs = append(diffs, fmt.Sprintf("%s: got %#v, want %#v", f.Name, gf.Interface(), wf.Interface()))
		}
	}
	return strings.Join(diffs, "; ")
}

// mustCreate creates a and fails the test at once if that does not work.
func mustCreate(t *testing.T, s storage.Store, a storage.Account) storage.Account {
	t.Helper()
	if err := s.CreateAccount(t.Context(), a); err != nil {
		t.Fatalf("CreateAccount(%q): %v", a.Username, err)
	}
	return a
}

// wantAccount reads id back and fails unless it equals want.
func wantAccount(t *testing.T, s storage.Store, want storage.Account) {
	t.Helper()
	got, err := s.GetAccount(t.Context(), want.ID)
	if err != nil {
		t.Fatalf("GetAccount(%q): %v", want.ID, err)
	}
	if d := diffAccount(want, got); d != "" {
		t.Fatalf("GetAccount(%q) differs: %s", want.ID, d)
	}
}

func ids(as []storage.Account) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}
