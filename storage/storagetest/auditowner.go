package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// testAuditWithTheChangeOwnerRecords: the changes that publish no event of their own
// (passkeys, API keys, store connections and product mappings, a token's revocation, an
// account token) store their entry with the change when the change's store call carries
// the outboxes (core/audit.Own), on every engine; a change that finds nothing to change
// stores none.
func testAuditWithTheChangeOwnerRecords(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := mustCreate(t, s, fullAccount(uniq("owner")))
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	pk, key, conn := newPasskey(acc.ID), apiKeyOf(acc.ID), fullStoreConnection(app.ID)
	var drafts []*draftOutbox
	change := func(what, recordType, record string, f func(ctx context.Context) error) {
		t.Helper()
		dctx, d := withDraft(ctx, acc.ID, app.ID, recordType, record)
		if err := f(dctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !d.wasStored() {
			t.Errorf("%s: the entry was not reported stored with the change", what)
		}
		drafts = append(drafts, d)
	}
	change("CreatePasskey", "account", pk.ID, func(c context.Context) error { return s.CreatePasskey(c, pk) })
	change("RenamePasskey", "account", pk.ID, func(c context.Context) error { return s.RenamePasskey(c, acc.ID, pk.ID, "renamed") })
	change("CreateAPIKey", "api_keys", key.ID, func(c context.Context) error { return s.CreateAPIKey(c, key) })
	change("UpdateAPIKey", "api_keys", key.ID, func(c context.Context) error {
		k := key
		k.Name = "edited"
		out, err := s.UpdateAPIKey(c, k)
		if err == nil && out.Name != "edited" {
			err = fmt.Errorf("answered %q, want the edit", out.Name)
		}
		return err
	})
	change("CreateStoreConnection", "stores", conn.ID, func(c context.Context) error { return s.CreateStoreConnection(c, conn) })
	var product storage.StoreProduct
	change("PutStoreProduct", "stores", conn.ID, func(c context.Context) error {
		var err error
		product, err = s.PutStoreProduct(c, storage.StoreProduct{ID: uniq("sp-"), AppID: app.ID, ConnectionID: conn.ID, ProductID: "prod_1",
			Level: 1, DeviceLimit: 1, CreatedAt: ms(0), UpdatedAt: ms(0)})
		return err
	})
	change("DeleteStoreProduct", "stores", conn.ID, func(c context.Context) error { return s.DeleteStoreProduct(c, app.ID, product.ID) })
	change("DeleteStoreConnection", "stores", conn.ID, func(c context.Context) error { return s.DeleteStoreConnection(c, app.ID, conn.ID) })
	change("RevokeToken", "account", acc.ID, func(c context.Context) error { return s.RevokeToken(c, uniq("jti"), ms(time.Hour)) })
	change("CreateAccountToken", "account", acc.ID, func(c context.Context) error {
		return s.CreateAccountToken(c, storage.AccountToken{Hash: uniq("hash"), AccountID: acc.ID, Purpose: "email_change", ExpiresAt: ms(time.Hour), CreatedAt: ms(0)})
	})
	change("DeletePasskey", "account", pk.ID, func(c context.Context) error { return s.DeletePasskey(c, acc.ID, pk.ID) })

	// Nothing to change: no entry.
	for what, f := range map[string]func(c context.Context) error{
		"RenamePasskey of none": func(c context.Context) error { return s.RenamePasskey(c, acc.ID, pk.ID, "x") },
		"DeletePasskey of none": func(c context.Context) error { return s.DeletePasskey(c, acc.ID, pk.ID) },
		"UpdateAPIKey of none":  func(c context.Context) error { _, err := s.UpdateAPIKey(c, apiKeyOf(acc.ID)); return err },
	} {
		dctx, d := withDraft(ctx, acc.ID, app.ID, "account", "none")
		if err := f(dctx); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", what, err)
		}
		if d.wasStored() {
			t.Errorf("%s: an entry was stored", what)
		}
	}
	recoverAudit(t, s)
	checkChain(t, s, acc.ID, 1, int64(len(drafts)))
}

// testAuditWithTheChangePartialUpdatesConcurrent: partial updates of one record made at
// once (a passkey's renames, an API key's edits: on MongoDB a $set, not updateDoc's
// replace) each store their entry once, and no entry's confirmation is lost to another
// write of the same document.
func testAuditWithTheChangePartialUpdatesConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := mustCreate(t, s, fullAccount(uniq("racing")))
	pk, key := newPasskey(acc.ID), apiKeyOf(acc.ID)
	if err := s.CreatePasskey(ctx, pk); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAPIKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 3
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				dctx, d := withDraft(ctx, acc.ID, "", "account", pk.ID)
				var err error
				if w%2 == 0 {
					err = s.RenamePasskey(dctx, acc.ID, pk.ID, fmt.Sprintf("name %d-%d", w, i))
				} else {
					k := key
					k.Name = fmt.Sprintf("name %d-%d", w, i)
					_, err = s.UpdateAPIKey(dctx, k)
				}
				if err == nil && !d.wasStored() {
					err = errors.New("entry not reported stored")
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d change %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recoverAudit(t, s)
	chain := checkChain(t, s, acc.ID, 1, writers*each)
	seen := map[string]bool{}
	for _, e := range chain {
		if seen[e.ID] {
			t.Fatalf("entry %s twice in the chain", e.ID)
		}
		seen[e.ID] = true
	}
}
