package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// Application access tokens (storage.Token); tokens.go tests the mailed account tokens.
var appTokenTests = []subtest{
	{"AppTokenRoundTrip", testAppTokenRoundTrip},
	{"AppTokenConflict", testAppTokenConflict},
	{"AppTokenScopedToApp", testAppTokenScopedToApp},
	{"AppTokenCreateAllOrNothing", testAppTokenCreateAllOrNothing},
	{"AppTokenList", testAppTokenList},
	{"AppTokenUpdate", testAppTokenUpdate},
	{"AppTokenUpdateMaxUsesConcurrent", testAppTokenUpdateMaxUsesConcurrent},
	{"AppTokenDelete", testAppTokenDelete},
}

func tokenCreated(t storage.Token) time.Time { return t.CreatedAt }

func testAppTokenRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	full := fullAppToken(app.ID, "Tok3n-Value_1")
	bare := minimalAppToken(app.ID, "bare")
	mustCreateAppTokens(t, s, full, bare)

	wantAppToken(t, s, full)
	wantAppToken(t, s, bare)
	got, err := s.GetTokenByValue(ctx, app.ID, full.Value)
	if err != nil {
		t.Fatalf("GetTokenByValue: %v", err)
	}
	if d := diff(full, got); d != "" {
		t.Errorf("GetTokenByValue differs: %s", d)
	}
	// Values are compared as stored.
	for _, v := range []string{strings.ToLower(full.Value), "Tok3n", full.Value + " "} {
		_, err := s.GetTokenByValue(ctx, app.ID, v)
		wantNotFound(t, fmt.Sprintf("GetTokenByValue(%q)", v), err)
	}
	list, total, err := s.ListTokens(ctx, app.ID, storage.Page{})
	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	if total != 2 {
		t.Errorf("ListTokens total = %d, want 2", total)
	}
	wantSame(t, "ListTokens", []storage.Token{full, bare}, list) // newest first; bare's CreatedAt is zero
	if err := s.CreateTokens(ctx, nil); err != nil {
		t.Errorf("CreateTokens(nil): %v", err)
	}
}

func testAppTokenConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	app2 := mustCreateApp(t, s, fullApp("acc-1", "app2"))
	first := mustCreateAppTokens(t, s, fullAppToken(app.ID, "value-1"))[0]
	second := mustCreateAppTokens(t, s, fullAppToken(app.ID, "value-2"))[0]

	sameID := fullAppToken(app2.ID, "value-new")
	sameID.ID = first.ID
	for name, tok := range map[string]storage.Token{
		"the same value":               fullAppToken(app.ID, "value-1"),
		"the same id (in another app)": sameID,
		"an identical token":           first,
	} {
		wantConflict(t, "CreateTokens with "+name, s.CreateTokens(ctx, []storage.Token{tok}))
	}
	if _, total, err := s.ListTokens(ctx, app2.ID, storage.Page{}); err != nil || total != 0 {
		t.Errorf("tokens of app2 after a refused create = (%d, %v), want 0", total, err)
	}
	// The value is free in another app.
	mustCreateAppTokens(t, s, fullAppToken(app2.ID, "value-1"))

	_, err := s.UpdateToken(ctx, app.ID, second.ID, func(x *storage.Token) error { x.Value = "value-1"; return nil })
	wantConflict(t, "UpdateToken to a taken value", err)
	wantAppToken(t, s, second)
	wantAppToken(t, s, first)
}

func testAppTokenScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	tok := mustCreateAppTokens(t, s, fullAppToken(app.ID, "mine"))[0]

	_, err := s.GetToken(ctx, other.ID, tok.ID)
	wantNotFound(t, "GetToken from another app", err)
	_, err = s.GetTokenByValue(ctx, other.ID, tok.Value)
	wantNotFound(t, "GetTokenByValue from another app", err)
	_, err = s.UpdateToken(ctx, other.ID, tok.ID, func(*storage.Token) error {
		t.Error("UpdateToken called fn for a token of another app")
		return nil
	})
	wantNotFound(t, "UpdateToken from another app", err)
	wantNotFound(t, "DeleteToken from another app", s.DeleteToken(ctx, other.ID, tok.ID))
	_, err = s.UpdateToken(ctx, app.ID, "missing", func(*storage.Token) error {
		t.Error("UpdateToken called fn for a missing token")
		return nil
	})
	wantNotFound(t, "UpdateToken(missing)", err)
	wantAppToken(t, s, tok)

	orphan := fullAppToken("no-such-app", "orphan")
	wantNotFound(t, "CreateTokens for an unknown app", s.CreateTokens(ctx, []storage.Token{orphan}))
	wantNotFound(t, "CreateTokens with one token of an unknown app",
		s.CreateTokens(ctx, []storage.Token{fullAppToken(app.ID, "good"), orphan}))
	if _, total, err := s.ListTokens(ctx, app.ID, storage.Page{}); err != nil || total != 1 {
		t.Errorf("tokens after refused batches = (%d, %v), want 1", total, err)
	}
}

func testAppTokenCreateAllOrNothing(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	existing := mustCreateAppTokens(t, s, fullAppToken(app.ID, "existing"))[0]

	const n = 250
	batch := func(at int, value string) []storage.Token {
		prefix := uniq("t")
		out := make([]storage.Token, n)
		for i := range out {
			out[i] = fullAppToken(app.ID, fmt.Sprintf("%s-%04d", prefix, i))
		}
		if at >= 0 {
			out[at].Value = value
		}
		return out
	}
	for _, at := range []int{0, n / 2, n - 1} {
		b := batch(at, existing.Value)
		wantConflict(t, fmt.Sprintf("CreateTokens with an existing value at %d", at), s.CreateTokens(ctx, b))
		if _, total, err := s.ListTokens(ctx, app.ID, storage.Page{}); err != nil || total != 1 {
			t.Errorf("tokens after the refused batch (value at %d) = (%d, %v), want 1", at, total, err)
		}
		for _, tok := range b {
			if _, err := s.GetToken(ctx, app.ID, tok.ID); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("token %s of the refused batch: error = %v, want ErrNotFound", tok.ID, err)
				break
			}
		}
	}
	wantAppToken(t, s, existing)

	good := batch(-1, "")
	mustCreateAppTokens(t, s, good...)
	if _, total, err := s.ListTokens(ctx, app.ID, storage.Page{}); err != nil || total != n+1 {
		t.Errorf("tokens after a good batch = (%d, %v), want %d", total, err, n+1)
	}
}

func testAppTokenList(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	var toks []storage.Token
	for i, age := range []int{3, 1, 4, 1, 5, 9, 2, 6} { // repeated ages: the id breaks ties
		tok := fullAppToken(app.ID, fmt.Sprintf("v%d", i))
		tok.CreatedAt = ms(time.Duration(age) * time.Minute)
		toks = append(toks, tok)
	}
	mustCreateAppTokens(t, s, toks...)
	mustCreateAppTokens(t, s, fullAppToken(other.ID, "v0"))

	want := newestFirst(toks, tokenCreated)
	for _, p := range []storage.Page{{}, {Limit: 3}, {Limit: 3, Offset: 3}, {Limit: 3, Offset: 6}, {Limit: 3, Offset: 8}, {Limit: 1, Offset: 2}} {
		got, total, err := s.ListTokens(ctx, app.ID, p)
		if err != nil {
			t.Fatalf("ListTokens(%+v): %v", p, err)
		}
		if total != len(toks) {
			t.Errorf("ListTokens(%+v) total = %d, want %d", p, total, len(toks))
		}
		np := p.Normalize()
		wantSame(t, fmt.Sprintf("ListTokens(%+v)", p), window(want, np.Offset, np.Limit), got)
	}
}

func testAppTokenUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	tok := mustCreateAppTokens(t, s, minimalAppToken(app.ID, "before"))[0]
	bystander := mustCreateAppTokens(t, s, fullAppToken(app.ID, "bystander"))[0]

	want := fullAppToken(app.ID, "after")
	want.ID, want.CreatedAt = tok.ID, tok.CreatedAt
	got, err := s.UpdateToken(ctx, app.ID, tok.ID, func(x *storage.Token) error { *x = want; return nil })
	if err != nil {
		t.Fatalf("UpdateToken: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateToken result differs: %s", d)
	}
	wantAppToken(t, s, want)
	wantAppToken(t, s, bystander)
	if got, err := s.GetTokenByValue(ctx, app.ID, "after"); err != nil || got.ID != tok.ID {
		t.Errorf("GetTokenByValue(new value) = (%q, %v), want %q", got.ID, err, tok.ID)
	}
	_, err = s.GetTokenByValue(ctx, app.ID, "before")
	wantNotFound(t, "GetTokenByValue(old value)", err)

	got, err = s.UpdateToken(ctx, app.ID, tok.ID, func(x *storage.Token) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", "other-app", ms(time.Hour)
		x.Note = "kept the rest"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateToken: %v", err)
	}
	want.Note = "kept the rest"
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateToken changing identity: result differs: %s", d)
	}
	wantAppToken(t, s, want)

	zero := storage.Token{ID: tok.ID, AppID: app.ID, Value: "z"}
	got, err = s.UpdateToken(ctx, app.ID, tok.ID, func(x *storage.Token) error { *x = zero; return nil })
	if err != nil {
		t.Fatalf("UpdateToken to zero values: %v", err)
	}
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateToken (zero values) result differs: %s", d)
	}
	wantAppToken(t, s, zero)

	errBoom := errors.New("boom")
	_, err = s.UpdateToken(ctx, app.ID, tok.ID, func(x *storage.Token) error {
		x.UsedCount = 5
		return errBoom
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateToken with a failing fn: error = %v, want fn's error only", err)
	}
	wantAppToken(t, s, zero)
}

// errExhausted is the updater's refusal once a token has no use left.
var errExhausted = errors.New("token exhausted")

// testAppTokenUpdateMaxUsesConcurrent races more validations than a token has uses, each
// counting one use only while UsedCount < MaxUses: exactly MaxUses must succeed, the rest
// must get the updater's refusal, and the stored count must end at MaxUses.
func testAppTokenUpdateMaxUsesConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	tok := minimalAppToken(app.ID, "limited")
	tok.MaxUses = 19
	mustCreateAppTokens(t, s, tok)
	bystander := mustCreateAppTokens(t, s, fullAppToken(app.ID, "bystander"))[0]

	const workers = 20
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		ok        int
		refused   int
		otherErrs []error
	)
	start := make(chan struct{})
	for range workers {
		wg.Go(func() {
			<-start
			got, err := s.UpdateToken(ctx, app.ID, tok.ID, func(x *storage.Token) error {
				if x.UsedCount >= x.MaxUses {
					return errExhausted
				}
				x.UsedCount++
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
				if got.UsedCount < 1 || got.UsedCount > tok.MaxUses {
					otherErrs = append(otherErrs, fmt.Errorf("a validation returned UsedCount %d", got.UsedCount))
				}
			case errors.Is(err, errExhausted):
				refused++
			default:
				otherErrs = append(otherErrs, err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range otherErrs {
		t.Error(err)
	}
	if ok != tok.MaxUses || refused != workers-tok.MaxUses {
		t.Errorf("%d concurrent validations of a token with %d uses: %d succeeded, %d refused; want %d and %d",
			workers, tok.MaxUses, ok, refused, tok.MaxUses, workers-tok.MaxUses)
	}
	got, err := s.GetToken(ctx, app.ID, tok.ID)
	if err != nil {
		t.Fatalf("GetToken: %v", err)
	}
	if got.UsedCount != tok.MaxUses {
		t.Errorf("stored UsedCount = %d, want %d", got.UsedCount, tok.MaxUses)
	}
	wantAppToken(t, s, bystander)
}

func testAppTokenDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	toks := mustCreateAppTokens(t, s, fullAppToken(app.ID, "one"), fullAppToken(app.ID, "two"))

	if err := s.DeleteToken(ctx, app.ID, toks[0].ID); err != nil {
		t.Fatalf("DeleteToken: %v", err)
	}
	_, err := s.GetToken(ctx, app.ID, toks[0].ID)
	wantNotFound(t, "GetToken after DeleteToken", err)
	_, err = s.GetTokenByValue(ctx, app.ID, "one")
	wantNotFound(t, "GetTokenByValue after DeleteToken", err)
	wantNotFound(t, "second DeleteToken", s.DeleteToken(ctx, app.ID, toks[0].ID))
	wantNotFound(t, "DeleteToken(missing)", s.DeleteToken(ctx, app.ID, "missing"))
	wantAppToken(t, s, toks[1])
	// The value and the id are free again.
	mustCreateAppTokens(t, s, toks[0])
}
