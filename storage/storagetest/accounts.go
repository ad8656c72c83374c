package storagetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var accountTests = []subtest{
	{"AccountRoundTrip", testAccountRoundTrip},
	{"AccountZeroValues", testAccountZeroValues},
	{"AccountTimePrecision", testAccountTimePrecision},
	{"AccountLookupCaseInsensitive", testAccountLookupCaseInsensitive},
	{"AccountByAPIKeyHash", testAccountByAPIKeyHash},
	{"AccountCreateConflict", testAccountCreateConflict},
	{"AccountUpdate", testAccountUpdate},
	{"AccountUpdateKeepsIDAndCreatedAt", testAccountUpdateKeepsIDAndCreatedAt},
	{"AccountUpdateReindexes", testAccountUpdateReindexes},
	{"AccountUpdateConflict", testAccountUpdateConflict},
	{"AccountUpdateFnErrorAborts", testAccountUpdateFnErrorAborts},
	{"AccountUpdateConcurrent", testAccountUpdateConcurrent},
	{"AccountDelete", testAccountDelete},
	{"AccountNotFound", testAccountNotFound},
	{"AccountList", testAccountList},
	{"AccountListPaging", testAccountListPaging},
	{"AccountListSearch", testAccountListSearch},
}

func testAccountRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("Round.Trip"))
	other := mustCreate(t, s, fullAccount("other"))

	wantAccount(t, s, a)
	wantAccount(t, s, other)

	lookups := []struct {
		name string
		get  func() (storage.Account, error)
	}{
		{"GetAccountByUsername", func() (storage.Account, error) { return s.GetAccountByUsername(ctx, a.Username) }},
		{"GetAccountByEmail", func() (storage.Account, error) { return s.GetAccountByEmail(ctx, a.Email) }},
		{"GetAccountByAPIKeyHash", func() (storage.Account, error) { return s.GetAccountByAPIKeyHash(ctx, a.APIKeyHash) }},
	}
	for _, l := range lookups {
		got, err := l.get()
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		if d := diffAccount(a, got); d != "" {
			t.Errorf("%s differs: %s", l.name, d)
		}
	}
}

func testAccountZeroValues(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, minimalAccount("zero"))
	got, err := s.GetAccount(t.Context(), a.ID)
	if err != nil {
		t.Fatalf("GetAccount: %v", err)
	}
	if d := diffAccount(a, got); d != "" {
		t.Fatalf("zero-valued account differs: %s", d)
	}
	for name, tm := range map[string]time.Time{
		"TokensValidAfter": got.TokensValidAfter, "APICallsResetAt": got.APICallsResetAt,
		"LastLoginAt": got.LastLoginAt, "CreatedAt": got.CreatedAt, "UpdatedAt": got.UpdatedAt,
	} {
		if !tm.IsZero() {
			t.Errorf("%s = %v, want the zero time", name, tm)
		}
	}
}

// testAccountTimePrecision writes times at the edges of millisecond precision and checks
// each one reads back as the same instant, in UTC.
func testAccountTimePrecision(t *testing.T, s storage.Store) {
	cases := []time.Time{
		time.Date(2024, 1, 1, 0, 0, 0, 1_000_000, time.UTC),        // 1 ms past a second
		time.Date(2024, 12, 31, 23, 59, 59, 999_000_000, time.UTC), // last ms of a year
		time.Date(2199, 6, 15, 12, 0, 0, 7_000_000, time.UTC),      // far future
		time.Date(1999, 12, 31, 23, 59, 59, 500_000_000, time.UTC), // before 2000
		// A caller in another zone, truncated by storage.Truncate as the contract asks.
		storage.Truncate(time.Date(2025, 7, 1, 9, 30, 0, 123_456_789, time.FixedZone("X", 5*3600+1800))),
	}
	for i, tm := range cases {
		a := minimalAccount(fmt.Sprintf("time%d", i))
		a.TokensValidAfter = tm
		a.APICallsResetAt = tm.Add(time.Millisecond)
		a.LastLoginAt = tm.Add(-time.Millisecond)
		a.CreatedAt = tm
		a.UpdatedAt = tm.Add(999 * time.Millisecond)
		mustCreate(t, s, a)
		wantAccount(t, s, a)
	}
}

func testAccountLookupCaseInsensitive(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := fullAccount("Alice.Smith")
	a.Email = "Alice.Smith@Example.COM"
	mustCreate(t, s, a)
	mustCreate(t, s, fullAccount("bob"))

	for _, u := range []string{"Alice.Smith", "alice.smith", "ALICE.SMITH", "aLiCe.sMiTh"} {
		got, err := s.GetAccountByUsername(ctx, u)
		if err != nil {
			t.Fatalf("GetAccountByUsername(%q): %v", u, err)
		}
		// The stored spelling is kept; only comparison ignores case.
		if d := diffAccount(a, got); d != "" {
			t.Errorf("GetAccountByUsername(%q) differs: %s", u, d)
		}
	}
	for _, e := range []string{"Alice.Smith@Example.COM", "alice.smith@example.com", "ALICE.SMITH@EXAMPLE.COM"} {
		got, err := s.GetAccountByEmail(ctx, e)
		if err != nil {
			t.Fatalf("GetAccountByEmail(%q): %v", e, err)
		}
		if d := diffAccount(a, got); d != "" {
			t.Errorf("GetAccountByEmail(%q) differs: %s", e, d)
		}
	}
	// Case-insensitive, not fuzzy: a prefix or the other field does not match.
	for _, u := range []string{"alice", "alice.smith@example.com", "alice.smith "} {
		if _, err := s.GetAccountByUsername(ctx, u); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("GetAccountByUsername(%q) error = %v, want ErrNotFound", u, err)
		}
	}
	if _, err := s.GetAccountByEmail(ctx, "Alice.Smith"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetAccountByEmail(username) error = %v, want ErrNotFound", err)
	}
}

func testAccountByAPIKeyHash(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("keyA"))
	b := mustCreate(t, s, fullAccount("keyB"))
	// Accounts without an API key must never be found by the empty hash.
	mustCreate(t, s, minimalAccount("nokey1"))
	mustCreate(t, s, minimalAccount("nokey2"))

	for _, want := range []storage.Account{a, b} {
		got, err := s.GetAccountByAPIKeyHash(ctx, want.APIKeyHash)
		if err != nil {
			t.Fatalf("GetAccountByAPIKeyHash(%q): %v", want.APIKeyHash, err)
		}
		if got.ID != want.ID {
			t.Errorf("GetAccountByAPIKeyHash(%q) = account %q, want %q", want.APIKeyHash, got.ID, want.ID)
		}
	}
	for _, h := range []string{"", strings.ToUpper(a.APIKeyHash), a.APIKeyHash[:10], "deadbeef"} {
		if got, err := s.GetAccountByAPIKeyHash(ctx, h); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("GetAccountByAPIKeyHash(%q) = (%q, %v), want ErrNotFound", h, got.ID, err)
		}
	}
}

func testAccountCreateConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("Taken"))

	dupUser := fullAccount("TAKEN")
	dupUser.Email = "someone.else@example.com"
	dupEmail := fullAccount("fresh")
	dupEmail.Email = strings.ToUpper(a.Email)
	dupID := fullAccount("another")
	dupID.ID = a.ID

	for name, c := range map[string]storage.Account{
		"username differing in case": dupUser,
		"email differing in case":    dupEmail,
		"same id":                    dupID,
		"identical account":          a,
	} {
		if err := s.CreateAccount(ctx, c); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("CreateAccount with %s: error = %v, want ErrConflict", name, err)
		}
	}

	// Nothing of the refused accounts was written, and the first one is untouched.
	wantAccount(t, s, a)
	for _, c := range []storage.Account{dupUser, dupEmail} {
		if _, err := s.GetAccount(ctx, c.ID); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("GetAccount(%q) of a refused account: error = %v, want ErrNotFound", c.ID, err)
		}
	}
	if _, err := s.GetAccountByEmail(ctx, dupUser.Email); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("email of a refused account was stored: error = %v, want ErrNotFound", err)
	}
	list, total, err := s.ListAccounts(ctx, storage.AccountQuery{})
	if err != nil {
		t.Fatalf("ListAccounts: %v", err)
	}
	if total != 1 || len(list) != 1 {
		t.Errorf("ListAccounts after refused creates: %d accounts, total %d; want 1, 1", len(list), total)
	}
}

func testAccountUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, minimalAccount("before"))
	other := mustCreate(t, s, fullAccount("bystander"))

	want := fullAccount("After")
	want.ID, want.CreatedAt = a.ID, a.CreatedAt
	calls := 0
	got, err := s.UpdateAccount(ctx, a.ID, func(acc *storage.Account) error {
		calls++
		// fn sees the stored record.
		if d := diffAccount(a, *acc); d != "" && calls == 1 {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*acc = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateAccount: %v", err)
	}
	if calls < 1 {
		t.Fatalf("UpdateAccount never called fn")
	}
	if d := diffAccount(want, got); d != "" {
		t.Errorf("UpdateAccount result differs: %s", d)
	}
	wantAccount(t, s, want)
	wantAccount(t, s, other)

	// Every field back to its zero value except the identity: zero must overwrite too.
	zero := storage.Account{ID: a.ID, Username: "z", Email: "z@z"}
	got, err = s.UpdateAccount(ctx, a.ID, func(acc *storage.Account) error {
		*acc = zero
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateAccount to zero values: %v", err)
	}
	if d := diffAccount(zero, got); d != "" {
		t.Errorf("UpdateAccount (zero values) result differs: %s", d)
	}
	wantAccount(t, s, zero)
}

func testAccountUpdateKeepsIDAndCreatedAt(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("keeper"))
	got, err := s.UpdateAccount(ctx, a.ID, func(acc *storage.Account) error {
		acc.ID = "hijacked"
		acc.CreatedAt = ms(time.Hour)
		acc.Plan = "enterprise"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateAccount: %v", err)
	}
	want := a
	want.Plan = "enterprise"
	if d := diffAccount(want, got); d != "" {
		t.Errorf("UpdateAccount result differs: %s", d)
	}
	wantAccount(t, s, want)
	if _, err := s.GetAccount(ctx, "hijacked"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetAccount(hijacked id) error = %v, want ErrNotFound", err)
	}
}

// testAccountUpdateReindexes checks that lookups follow a changed username, email and API
// key hash, and that the old values are free again.
func testAccountUpdateReindexes(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("oldname"))
	oldEmail, oldHash := a.Email, a.APIKeyHash

	updated, err := s.UpdateAccount(ctx, a.ID, func(acc *storage.Account) error {
		acc.Username = "NewName"
		acc.Email = "New.Mail@Example.net"
		acc.APIKeyHash = "rotated-" + acc.APIKeyHash
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateAccount: %v", err)
	}

	if _, err := s.GetAccountByUsername(ctx, "oldname"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("old username still found: error = %v, want ErrNotFound", err)
	}
	if _, err := s.GetAccountByEmail(ctx, oldEmail); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("old email still found: error = %v, want ErrNotFound", err)
	}
	if _, err := s.GetAccountByAPIKeyHash(ctx, oldHash); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("old API key hash still found: error = %v, want ErrNotFound", err)
	}
	for name, get := range map[string]func() (storage.Account, error){
		"username": func() (storage.Account, error) { return s.GetAccountByUsername(ctx, "newname") },
		"email":    func() (storage.Account, error) { return s.GetAccountByEmail(ctx, "NEW.MAIL@example.NET") },
		"key hash": func() (storage.Account, error) { return s.GetAccountByAPIKeyHash(ctx, updated.APIKeyHash) },
	} {
		got, err := get()
		if err != nil {
			t.Fatalf("lookup by new %s: %v", name, err)
		}
		if d := diffAccount(updated, got); d != "" {
			t.Errorf("lookup by new %s differs: %s", name, d)
		}
	}

	// The old username and email are free for another account.
	b := fullAccount("OLDNAME")
	b.Email = strings.ToLower(oldEmail)
	mustCreate(t, s, b)
	wantAccount(t, s, b)
}

func testAccountUpdateConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("first"))
	b := mustCreate(t, s, fullAccount("second"))

	for name, fn := range map[string]func(*storage.Account) error{
		"username of another account": func(acc *storage.Account) error { acc.Username = "FIRST"; return nil },
		"email of another account":    func(acc *storage.Account) error { acc.Email = strings.ToUpper(a.Email); return nil },
	} {
		if _, err := s.UpdateAccount(ctx, b.ID, fn); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("UpdateAccount to the %s: error = %v, want ErrConflict", name, err)
		}
	}
	wantAccount(t, s, a)
	wantAccount(t, s, b)

	// Changing only the case of one's own username and email is not a conflict.
	want := b
	want.Username, want.Email = strings.ToUpper(b.Username), strings.ToLower(b.Email)
	got, err := s.UpdateAccount(ctx, b.ID, func(acc *storage.Account) error {
		acc.Username, acc.Email = want.Username, want.Email
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateAccount changing own case: %v", err)
	}
	if d := diffAccount(want, got); d != "" {
		t.Errorf("UpdateAccount changing own case differs: %s", d)
	}
	wantAccount(t, s, want)
}

func testAccountUpdateFnErrorAborts(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("steady"))
	errBoom := errors.New("boom")
	_, err := s.UpdateAccount(ctx, a.ID, func(acc *storage.Account) error {
		acc.Username = "changed"
		acc.APICallsUsed = 999_999
		acc.LastLoginAt = ms(time.Minute)
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("UpdateAccount error = %v, want fn's error", err)
	}
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("fn's error was turned into a storage sentinel: %v", err)
	}
	wantAccount(t, s, a)
	if _, err := s.GetAccountByUsername(ctx, "changed"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("aborted username change is visible: error = %v, want ErrNotFound", err)
	}
}

// testAccountUpdateConcurrent runs many read-modify-write updaters on one account at
// once; an engine that is not atomic per record loses increments.
func testAccountUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := minimalAccount("counter")
	a.APICallsUsed = 0
	mustCreate(t, s, a)
	bystander := mustCreate(t, s, fullAccount("unrelated"))

	const workers = 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			_, err := s.UpdateAccount(ctx, a.ID, func(acc *storage.Account) error {
				acc.APICallsUsed++
				// Half of the updaters also touch another field, so both kinds of change
				// must survive together.
				if i%2 == 0 {
					acc.TwoFactorLastStep++
				}
				return nil
			})
			if err != nil {
				errs <- fmt.Errorf("updater %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	got, err := s.GetAccount(ctx, a.ID)
	if err != nil {
		t.Fatalf("GetAccount: %v", err)
	}
	if got.APICallsUsed != workers {
		t.Errorf("APICallsUsed = %d after %d concurrent increments, want %d", got.APICallsUsed, workers, workers)
	}
	if got.TwoFactorLastStep != workers/2 {
		t.Errorf("TwoFactorLastStep = %d, want %d", got.TwoFactorLastStep, workers/2)
	}
	wantAccount(t, s, bystander)
}

func testAccountDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("Doomed"))
	b := mustCreate(t, s, fullAccount("survivor"))

	if err := s.DeleteAccount(ctx, a.ID); err != nil {
		t.Fatalf("DeleteAccount: %v", err)
	}
	if _, err := s.GetAccount(ctx, a.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetAccount after delete: error = %v, want ErrNotFound", err)
	}
	if _, err := s.GetAccountByUsername(ctx, a.Username); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetAccountByUsername after delete: error = %v, want ErrNotFound", err)
	}
	if _, err := s.GetAccountByAPIKeyHash(ctx, a.APIKeyHash); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetAccountByAPIKeyHash after delete: error = %v, want ErrNotFound", err)
	}
	if err := s.DeleteAccount(ctx, a.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("second DeleteAccount: error = %v, want ErrNotFound", err)
	}
	wantAccount(t, s, b)

	// The username and email are free again, and the id can be reused.
	c := fullAccount("doomed")
	c.ID, c.Email = a.ID, strings.ToUpper(a.Email)
	mustCreate(t, s, c)
	wantAccount(t, s, c)
}

func testAccountNotFound(t *testing.T, s storage.Store) {
	ctx := t.Context()
	mustCreate(t, s, fullAccount("present"))

	checks := map[string]func() error{
		"GetAccount": func() error { _, err := s.GetAccount(ctx, "missing"); return err },
		"GetAccount empty id": func() error {
			_, err := s.GetAccount(ctx, "")
			return err
		},
		"GetAccountByUsername":   func() error { _, err := s.GetAccountByUsername(ctx, "missing"); return err },
		"GetAccountByEmail":      func() error { _, err := s.GetAccountByEmail(ctx, "missing@example.com"); return err },
		"GetAccountByAPIKeyHash": func() error { _, err := s.GetAccountByAPIKeyHash(ctx, "missing"); return err },
		"DeleteAccount":          func() error { return s.DeleteAccount(ctx, "missing") },
		"UpdateAccount": func() error {
			_, err := s.UpdateAccount(ctx, "missing", func(*storage.Account) error {
				t.Error("UpdateAccount called fn for a missing account")
				return nil
			})
			return err
		},
		"ConsumeAccountToken": func() error {
			_, err := s.ConsumeAccountToken(ctx, storage.TokenVerifyEmail, "missing", base)
			return err
		},
	}
	for name, call := range checks {
		if err := call(); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: error = %v, want ErrNotFound", name, err)
		}
	}
	// Nothing was created on the way.
	_, total, err := s.ListAccounts(ctx, storage.AccountQuery{})
	if err != nil {
		t.Fatalf("ListAccounts: %v", err)
	}
	if total != 1 {
		t.Errorf("ListAccounts total = %d, want 1", total)
	}
}

// createAged creates n accounts whose CreatedAt are one minute apart, inserted in a random
// order so that an engine returning insertion order fails. It returns them oldest first.
func createAged(t *testing.T, s storage.Store, names []string) []storage.Account {
	t.Helper()
	accs := make([]storage.Account, len(names))
	for i, n := range names {
		a := fullAccount(n)
		a.CreatedAt = ms(time.Duration(i) * time.Minute)
		accs[i] = a
	}
	order := rand.Perm(len(accs))
	// A permutation that happens to be the identity would prove nothing about ordering.
	if slices.IsSorted(order) && len(order) > 1 {
		order[0], order[1] = order[1], order[0]
	}
	for _, i := range order {
		mustCreate(t, s, accs[i])
	}
	return accs
}

func testAccountList(t *testing.T, s storage.Store) {
	ctx := t.Context()
	got, total, err := s.ListAccounts(ctx, storage.AccountQuery{})
	if err != nil {
		t.Fatalf("ListAccounts on an empty store: %v", err)
	}
	if len(got) != 0 || total != 0 {
		t.Fatalf("ListAccounts on an empty store: %d accounts, total %d; want none", len(got), total)
	}

	accs := createAged(t, s, []string{"delta", "alpha", "charlie", "bravo", "echo"})
	got, total, err = s.ListAccounts(ctx, storage.AccountQuery{})
	if err != nil {
		t.Fatalf("ListAccounts: %v", err)
	}
	if total != len(accs) {
		t.Errorf("total = %d, want %d", total, len(accs))
	}
	if !slices.Equal(ids(got), ids(accs)) {
		t.Fatalf("ListAccounts order = %v, want oldest first %v", ids(got), ids(accs))
	}
	for i := range got {
		if d := diffAccount(accs[i], got[i]); d != "" {
			t.Errorf("listed account %d differs: %s", i, d)
		}
	}
}

func testAccountListPaging(t *testing.T, s storage.Store) {
	ctx := t.Context()
	names := make([]string, 7)
	for i := range names {
		names[i] = fmt.Sprintf("page%c", 'g'-i) // names sort opposite to age
	}
	accs := createAged(t, s, names)

	cases := []struct {
		page storage.Page
		want []storage.Account
	}{
		{storage.Page{Limit: 3}, accs[0:3]},
		{storage.Page{Limit: 3, Offset: 3}, accs[3:6]},
		{storage.Page{Limit: 3, Offset: 6}, accs[6:7]},
		{storage.Page{Limit: 3, Offset: 7}, nil},
		{storage.Page{Limit: 3, Offset: 100}, nil},
		{storage.Page{Limit: 1, Offset: 4}, accs[4:5]},
		{storage.Page{Limit: 100}, accs},
		{storage.Page{}, accs},                          // 0 means the default page size
		{storage.Page{Limit: 2, Offset: -1}, accs[0:2]}, // a negative offset counts as 0
	}
	for _, c := range cases {
		got, total, err := s.ListAccounts(ctx, storage.AccountQuery{Page: c.page})
		if err != nil {
			t.Fatalf("ListAccounts(%+v): %v", c.page, err)
		}
		if total != len(accs) {
			t.Errorf("ListAccounts(%+v) total = %d, want %d", c.page, total, len(accs))
		}
		if !slices.Equal(ids(got), ids(c.want)) {
			t.Errorf("ListAccounts(%+v) = %v, want %v", c.page, ids(got), ids(c.want))
		}
	}

	// The default page size is 50: with more accounts than that, one page is not all.
	var more []string
	for i := range 53 {
		more = append(more, fmt.Sprintf("bulk%02d", i))
	}
	for _, n := range more {
		mustCreate(t, s, minimalAccount(n))
	}
	got, total, err := s.ListAccounts(ctx, storage.AccountQuery{})
	if err != nil {
		t.Fatalf("ListAccounts: %v", err)
	}
	if len(got) != 50 || total != len(accs)+len(more) {
		t.Errorf("ListAccounts default page: %d accounts, total %d; want 50, %d", len(got), total, len(accs)+len(more))
	}
}

func testAccountListSearch(t *testing.T, s storage.Store) {
	ctx := t.Context()
	mk := func(username, email string, age int) storage.Account {
		a := fullAccount(username)
		a.Email = email
		a.CreatedAt = ms(time.Duration(age) * time.Minute)
		return mustCreate(t, s, a)
	}
	// Inserted out of age order on purpose.
	carol := mk("Carol", "carol@Brava.example", 3)
	bravo := mk("BravoTeam", "team@example.com", 1)
	zed := mk("zed", "zed@zulu.example", 5)
	dots := mk("a.b", "dots@example.com", 4)
	axb := mk("axb", "axb@example.com", 2)
	pct := mk("100%_sure", "pct@example.com", 6)
	other := mk("other", "someone@elsewhere.test", 0)

	cases := []struct {
		search string
		page   storage.Page
		want   []storage.Account
		total  int
	}{
		{"BRAV", storage.Page{}, []storage.Account{bravo, carol}, 2}, // username or email, any case
		{"brav", storage.Page{Limit: 1}, []storage.Account{bravo}, 2},
		{"brav", storage.Page{Limit: 1, Offset: 1}, []storage.Account{carol}, 2},
		{"ZULU", storage.Page{}, []storage.Account{zed}, 1}, // email only
		{"example.com", storage.Page{}, []storage.Account{bravo, axb, dots, pct}, 4},
		// Search is a literal substring: no regular expression or LIKE wildcard meaning.
		{"a.b", storage.Page{}, []storage.Account{dots}, 1},
		{"%", storage.Page{}, []storage.Account{pct}, 1},
		{"_", storage.Page{}, []storage.Account{pct}, 1},
		{"0%_S", storage.Page{}, []storage.Account{pct}, 1},
		{"(", storage.Page{}, nil, 0},
		{"nobody", storage.Page{}, nil, 0},
		{"", storage.Page{}, []storage.Account{other, bravo, axb, carol, dots, zed, pct}, 7},
	}
	for _, c := range cases {
		got, total, err := s.ListAccounts(ctx, storage.AccountQuery{Search: c.search, Page: c.page})
		if err != nil {
			t.Fatalf("ListAccounts(search %q): %v", c.search, err)
		}
		if total != c.total {
			t.Errorf("ListAccounts(search %q, %+v) total = %d, want %d", c.search, c.page, total, c.total)
		}
		if !slices.Equal(ids(got), ids(c.want)) {
			t.Errorf("ListAccounts(search %q, %+v) = %v, want %v", c.search, c.page, ids(got), ids(c.want))
		}
	}
}
