package storagetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// SealingHarness opens one engine's store on a location several times, and reads what it
// stored there raw (file bytes, or every document as BSON), bypassing the engine.
type SealingHarness struct {
	// NewLocation answers a fresh, empty location (a file path, a database name) that
	// lives until the test ends.
	NewLocation func(t *testing.T) string
	// Open opens the store at where with the sealer (nil: secrets in clear); the test
	// closes it.
	Open func(t *testing.T, where string, sealer storage.Sealer) (storage.Store, error)
	// Raw answers the stored bytes at where, read after the store was closed.
	Raw func(t *testing.T, where string) []byte
}

// TestSealer answers a Sealer for engines' test stores, so that the conformance suite's
// round trips go through sealing as the server's stores do.
func TestSealer(t testing.TB) storage.Sealer { return box(t, "t") }

func box(t testing.TB, key string) *secrets.Box {
	t.Helper()
	b, err := secrets.NewBox([]byte(strings.Repeat(key, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Secret values the tests look for in the raw bytes.
const (
	rawTOTP        = "JBSWY3DPEHPK3PXPRAWTOTPSECRET"
	rawPending     = "KRSXG5CTMVRXEZLURAWPENDINGSEC"
	rawIntegration = "whsec_RAWINTEGRATIONSECRET0123456789"
	rawSigningKey  = "UkFXU0lHTklOR0tFWVNFRUQwMTIzNDU2Nzg5MDEyMzQ"
)

func seedSecrets(t *testing.T, s storage.Store) {
	t.Helper()
	ctx := t.Context()
	if err := s.CreateAccount(ctx, storage.Account{ID: "acc-sealed", Username: "sealed", Email: "sealed@example.com",
		TwoFactorEnabled: true, TwoFactorSecret: rawTOTP, TwoFactorPending: rawPending}); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if err := s.CreateApp(ctx, storage.App{ID: "app-sealed", AccountID: "acc-sealed", Name: "Sealed", SigningKey: rawSigningKey}); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	if err := s.CreateIntegration(ctx, storage.Integration{ID: "int-sealed", AppID: "app-sealed", Name: "hook", Kind: "CUSTOM",
		URL: "https://example.com/hook", Secret: rawIntegration}); err != nil {
		t.Fatalf("CreateIntegration: %v", err)
	}
}

func checkClearReads(t *testing.T, s storage.Store) {
	t.Helper()
	a, err := s.GetAccount(t.Context(), "acc-sealed")
	if err != nil || a.TwoFactorSecret != rawTOTP || a.TwoFactorPending != rawPending {
		t.Fatalf("GetAccount = %q %q, %v; want the clear secrets", a.TwoFactorSecret, a.TwoFactorPending, err)
	}
	list, _, err := s.ListAccounts(t.Context(), storage.AccountQuery{})
	if err != nil || len(list) != 1 || list[0].TwoFactorSecret != rawTOTP {
		t.Fatalf("ListAccounts = %+v, %v", list, err)
	}
	i, err := s.GetIntegration(t.Context(), "app-sealed", "int-sealed")
	if err != nil || i.Secret != rawIntegration {
		t.Fatalf("GetIntegration secret = %q, %v", i.Secret, err)
	}
	is, err := s.ListIntegrations(t.Context(), "app-sealed")
	if err != nil || len(is) != 1 || is[0].Secret != rawIntegration {
		t.Fatalf("ListIntegrations = %+v, %v", is, err)
	}
	app, err := s.GetAppByID(t.Context(), "app-sealed")
	if err != nil || app.SigningKey != rawSigningKey {
		t.Fatalf("GetAppByID signing key = %q, %v", app.SigningKey, err)
	}
}

func closeStore(t *testing.T, s storage.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func rawContains(raw []byte, values ...string) []string {
	var found []string
	for _, v := range values {
		if bytes.Contains(raw, []byte(v)) {
			found = append(found, v)
		}
	}
	return found
}

// RunSealing checks encryption at rest of the secrets a store reads back: TOTP secrets and
// integration signing secrets are never in the stored bytes when a Sealer is set, read
// back clear, values stored in clear before are sealed when the store opens, and a store
// opened with another key refuses to open.
func RunSealing(t *testing.T, h SealingHarness) {
	t.Run("secrets are sealed at rest", func(t *testing.T) {
		where := h.NewLocation(t)
		s, err := h.Open(t, where, box(t, "a"))
		if err != nil {
			t.Fatal(err)
		}
		seedSecrets(t, s)
		checkClearReads(t, s)
		// An update through the store keeps them sealed, and answers them clear.
		a, err := s.UpdateAccount(t.Context(), "acc-sealed", func(a *storage.Account) error { a.TwoFactorLastStep = 7; return nil })
		if err != nil || a.TwoFactorSecret != rawTOTP {
			t.Fatalf("UpdateAccount = %q, %v", a.TwoFactorSecret, err)
		}
		app, err := s.UpdateApp(t.Context(), "acc-sealed", "app-sealed", func(a *storage.App) error { a.GraceSeconds = 5; return nil })
		if err != nil || app.SigningKey != rawSigningKey {
			t.Fatalf("UpdateApp = %q, %v", app.SigningKey, err)
		}
		in, err := s.UpdateIntegration(t.Context(), "app-sealed", "int-sealed", func(i *storage.Integration) error { i.Name = "renamed"; return nil })
		if err != nil || in.Secret != rawIntegration {
			t.Fatalf("UpdateIntegration = %q, %v", in.Secret, err)
		}
		checkClearReads(t, s)
		closeStore(t, s)
		raw := h.Raw(t, where)
		if !bytes.Contains(raw, []byte("sealed@example.com")) {
			t.Fatal("the raw bytes do not hold the account: the harness reads the wrong place")
		}
		if found := rawContains(raw, rawTOTP, rawPending, rawIntegration, rawSigningKey); len(found) > 0 {
			t.Fatalf("secrets in clear in the stored bytes: %v", found)
		}
	})
	t.Run("store connection secrets are sealed at rest", func(t *testing.T) {
		const rawStoreSecret = "whsec_store_clear_marker_0123456789"
		where := h.NewLocation(t)
		s, err := h.Open(t, where, box(t, "a"))
		if err != nil {
			t.Fatal(err)
		}
		seedSecrets(t, s)
		c := storage.StoreConnection{ID: "sc-sealed", AppID: "app-sealed", Provider: "stripe", ReceiverID: "rcv-sealed", Secret: rawStoreSecret, Enabled: true}
		if err := s.CreateStoreConnection(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		got, err := s.UpdateStoreConnection(t.Context(), "app-sealed", "sc-sealed", func(c *storage.StoreConnection) error { c.Name = "renamed"; return nil })
		if err != nil || got.Secret != rawStoreSecret {
			t.Fatalf("UpdateStoreConnection = %q, %v", got.Secret, err)
		}
		if got, err := s.GetStoreConnectionByReceiver(t.Context(), "rcv-sealed"); err != nil || got.Secret != rawStoreSecret {
			t.Fatalf("GetStoreConnectionByReceiver = %q, %v", got.Secret, err)
		}
		closeStore(t, s)
		if found := rawContains(h.Raw(t, where), rawStoreSecret); len(found) > 0 {
			t.Fatalf("a store's signing secret in clear in the stored bytes: %v", found)
		}
	})
	t.Run("secrets stored in clear are sealed at open", func(t *testing.T) {
		where := h.NewLocation(t)
		s, err := h.Open(t, where, nil)
		if err != nil {
			t.Fatal(err)
		}
		seedSecrets(t, s)
		closeStore(t, s)
		if found := rawContains(h.Raw(t, where), rawTOTP, rawPending, rawIntegration); len(found) != 3 {
			t.Fatalf("without a sealer the secrets should be stored in clear (the test's premise), found %v", found)
		}
		s, err = h.Open(t, where, box(t, "a"))
		if err != nil {
			t.Fatalf("Open with a sealer over clear secrets: %v", err)
		}
		checkClearReads(t, s)
		closeStore(t, s)
		if found := rawContains(h.Raw(t, where), rawTOTP, rawPending, rawIntegration); len(found) > 0 {
			t.Fatalf("secrets still in clear after Open sealed them: %v", found)
		}
		// Reopening with the same key finds them sealed and opens them.
		s, err = h.Open(t, where, box(t, "a"))
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		checkClearReads(t, s)
		closeStore(t, s)
	})
	t.Run("another key refuses to open", func(t *testing.T) {
		where := h.NewLocation(t)
		s, err := h.Open(t, where, box(t, "a"))
		if err != nil {
			t.Fatal(err)
		}
		seedSecrets(t, s)
		closeStore(t, s)
		s, err = h.Open(t, where, box(t, "b"))
		if err == nil {
			closeStore(t, s)
			t.Fatal("Open with another key succeeded")
		}
		if !errors.Is(err, secrets.ErrCannotOpen) {
			t.Fatalf("Open with another key: %v, want secrets.ErrCannotOpen", err)
		}
	})
	t.Run("a deleted integration's secret is gone", func(t *testing.T) {
		where := h.NewLocation(t)
		s, err := h.Open(t, where, box(t, "a"))
		if err != nil {
			t.Fatal(err)
		}
		seedSecrets(t, s)
		if err := s.DeleteIntegration(t.Context(), "app-sealed", "int-sealed"); err != nil {
			t.Fatal(err)
		}
		closeStore(t, s)
		if found := rawContains(h.Raw(t, where), rawIntegration); len(found) > 0 {
			t.Fatalf("deleted secret in the stored bytes: %v", found)
		}
	})
}
