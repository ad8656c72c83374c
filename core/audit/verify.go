package audit

import (
	"context"
	"fmt"

	"github.com/keyward/keyward/storage"
)

// ChainReader is what Verify reads: the accounts with a chain and each chain in order.
type ChainReader interface {
	AuditAccounts(ctx context.Context) ([]string, error)
	AuditChain(ctx context.Context, accountID string, afterSeq int64, limit int) ([]storage.AuditEntry, error)
}

// Broken names the first entry of an account's chain that does not verify.
type Broken struct {
	AccountID string
	EntryID   string
	Seq       int64
	Reason    string
}

func (b Broken) String() string {
	return fmt.Sprintf("account %s: entry %s (seq %d): %s", b.AccountID, b.EntryID, b.Seq, b.Reason)
}

// Report is the outcome of Verify: how much was checked and, per account whose chain is
// broken, its first broken entry (in account order).
type Report struct {
	Accounts int
	Entries  int
	Broken   []Broken
}

// OK reports a verification that found nothing broken.
func (r Report) OK() bool { return len(r.Broken) == 0 }

// verifyPage is how many entries one read of a chain takes.
const verifyPage = 500

// Verify walks every account's chain from its oldest kept entry and names the first entry
// that does not hold: a stored hash that is not the hash of the entry (the entry was
// edited), a sequence gap (an entry was deleted from the middle), or a link that is not
// the hash of the entry before (the entry before was edited and rehashed, or replaced).
// The oldest kept entry anchors on its own stored link, since the retention purge removes
// the start of a chain; a chain cut at its start is therefore not detected, and nor is the
// removal of an account's entries from the end (these need a copy of the chain's ends
// kept elsewhere).
func Verify(ctx context.Context, store ChainReader) (Report, error) {
	accounts, err := store.AuditAccounts(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("audit: verify: %w", err)
	}
	var r Report
	for _, account := range accounts {
		n, broken, err := verifyAccount(ctx, store, account)
		if err != nil {
			return r, fmt.Errorf("audit: verify account %s: %w", account, err)
		}
		r.Accounts++
		r.Entries += n
		if broken != nil {
			r.Broken = append(r.Broken, *broken)
		}
	}
	return r, nil
}

// verifyAccount walks one chain page by page and answers the entries checked and the
// first broken one (nil when none).
func verifyAccount(ctx context.Context, store ChainReader, account string) (int, *Broken, error) {
	var prev *storage.AuditEntry
	checked := 0
	after := int64(0)
	for {
		page, err := store.AuditChain(ctx, account, after, verifyPage)
		if err != nil {
			return checked, nil, err
		}
		for i := range page {
			e := page[i]
			checked++
			if reason := checkLink(prev, e); reason != "" {
				return checked, &Broken{AccountID: account, EntryID: e.ID, Seq: e.Seq, Reason: reason}, nil
			}
			prev = &page[i]
		}
		if len(page) < verifyPage {
			return checked, nil, nil
		}
		after = page[len(page)-1].Seq
	}
}

// checkLink answers why e does not verify after prev (nil: e is the oldest kept), or "".
func checkLink(prev *storage.AuditEntry, e storage.AuditEntry) string {
	switch {
	case e.Hash != storage.AuditHash(e):
		return "the stored hash is not the hash of the entry: the entry was changed after it was written"
	case prev == nil && e.Seq == 1 && e.PrevHash != "":
		return "the first entry of the chain links to an entry before it"
	case prev != nil && e.Seq != prev.Seq+1:
		return fmt.Sprintf("entries %d to %d are missing: deleted from the middle of the chain", prev.Seq+1, e.Seq-1)
	case prev != nil && e.PrevHash != prev.Hash:
		return fmt.Sprintf("does not link to entry %d: that entry was replaced or rewritten with a new hash", prev.Seq)
	}
	return ""
}
