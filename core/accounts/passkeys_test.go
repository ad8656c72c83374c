package accounts_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/internal/softauthn"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/mongo"
	"github.com/keyward/keyward/storage/sqlite"
)

type dropMail struct{}

func (dropMail) Enqueue(mail.Message) {}

// passkeyService builds the service on st with publicURL and an owner with one passkey of
// the answered authenticator.
func passkeyService(tb testing.TB, st accounts.Store, publicURL string) (*accounts.Service, accounts.Principal) {
	tb.Helper()
	catalogue, err := plans.New(plans.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := accounts.New(accounts.Deps{Store: st, Hasher: passwords.NewHasher(passwords.Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}, 0),
		Plans: catalogue, Mailer: dropMail{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		accounts.Config{JWTSecret: []byte("0123456789abcdef0123456789abcdef"), PublicURL: publicURL})
	if err != nil {
		tb.Fatal(err)
	}
	now := storage.Now()
	name := testenv.UniqueName("pk")
	a := storage.Account{ID: "acc-" + name, Username: name,
		Role: storage.RoleUser, Plan: plans.Free, EmailVerified: true, CreatedAt: now, UpdatedAt: now}
	a.Email = a.Username + "@example.com"
	if err := st.CreateAccount(tb.Context(), a); err != nil {
		tb.Fatal(err)
	}
	return svc, accounts.Principal{Account: a, SessionID: "setup"}
}

func register(tb testing.TB, svc *accounts.Service, p accounts.Principal, auth *softauthn.Authenticator) {
	tb.Helper()
	c, err := svc.BeginPasskeyRegistration(tb.Context(), p)
	if err != nil {
		tb.Fatal(err)
	}
	opts, _ := json.Marshal(c.Options)
	resp, _, err := auth.Register(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := svc.FinishPasskeyRegistration(tb.Context(), p, c.ChallengeID, "bench", resp); err != nil {
		tb.Fatal(err)
	}
}

// TestPasskeyRelyingPartyFromPublicURL: the relying party is the public URL's host; an
// address or no URL answers a conflict, not a ceremony browsers would refuse.
func TestPasskeyRelyingPartyFromPublicURL(t *testing.T) {
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, bad := range []string{"http://127.0.0.1:8080", "http://[::1]:8080", "ftp://keys.example.test", ""} {
		svc, _ := passkeyService(t, st, bad)
		if _, err := svc.BeginPasskeyLogin(t.Context(), ""); core.CodeOf(err) != core.CodeConflict {
			t.Errorf("public URL %q: %v, want CONFLICT", bad, err)
		}
	}
	svc, _ := passkeyService(t, st, "https://keys.example.test:8443/")
	c, err := svc.BeginPasskeyLogin(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(c.Options)
	var o struct {
		PublicKey struct {
			RPID             string `json:"rpId"`
			UserVerification string `json:"userVerification"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal(opts, &o); err != nil || o.PublicKey.RPID != "keys.example.test" || o.PublicKey.UserVerification != "required" {
		t.Fatalf("options %s: want rpId keys.example.test and user verification required", opts)
	}
	if !c.ExpiresAt.After(time.Now().Add(accounts.PasskeyChallengeTTL - time.Minute)) {
		t.Fatalf("challenge expires at %v", c.ExpiresAt)
	}
}

// BenchmarkPasskeySignIn measures a passkey sign-in on the server: begin (options and the
// stored challenge) and finish (challenge consumed, assertion verified, counter stored,
// session made), the software authenticator's signature left out. SQLite always; MongoDB
// when KEYWARD_TEST_MONGO_URI is set (deploy/testenv.sh).
//
//	bash deploy/testenv.sh go test -run '^$' -bench PasskeySignIn -benchtime 200x ./core/accounts/
func BenchmarkPasskeySignIn(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "k.db")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		benchPasskeySignIn(b, st)
	})
	b.Run("mongo", func(b *testing.B) {
		uri := testenv.MongoURI(b)
		st, err := mongo.Open(b.Context(), mongo.Config{URI: uri, Database: testenv.UniqueName("kwbench_")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		benchPasskeySignIn(b, st)
	})
}

func benchPasskeySignIn(b *testing.B, st accounts.Store) {
	origin := "https://keys.example.test"
	svc, p := passkeyService(b, st, origin)
	auth := softauthn.New(origin)
	register(b, svc, p, auth)
	ctx := accounts.WithClient(context.Background(), accounts.ClientInfo{UserAgent: "bench", IP: "192.0.2.1"})
	for b.Loop() {
		c, err := svc.BeginPasskeyLogin(ctx, "")
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		opts, _ := json.Marshal(c.Options)
		resp, err := auth.Assert(opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := svc.FinishPasskeyLogin(ctx, accounts.PasskeyAssertion{ChallengeID: c.ChallengeID, Credential: resp}); err != nil {
			b.Fatal(err)
		}
	}
}
