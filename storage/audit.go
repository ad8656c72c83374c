package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// AuditAfterCount answers after (an entry's After: a JSON object, "" for none) with its
// member "count" set to n: what a bulk deletion's entry says of how many records went,
// known to an engine that stages the entry before the deletions only once they are done
// (MongoDB: DeleteLicenses, DeleteLicensesWhere, and their recovery).
func AuditAfterCount(after string, n int) string {
	m := map[string]any{}
	if after != "" {
		if err := json.Unmarshal([]byte(after), &m); err != nil {
			return after
		}
	}
	m["count"] = n
	b, err := json.Marshal(m)
	if err != nil {
		return after
	}
	return string(b)
}

// Actor types of an audit entry: how the caller authenticated.
const (
	ActorSession    = "session"
	ActorAccountKey = "account_key"
	ActorAPIKey     = "api_key"
)

// AuditEntry is one change made through the Dashboard or admin API (issue 14). Secrets and
// passwords are never in it (the edge redacts them before recording).
type AuditEntry struct {
	ID string
	// AccountID is the account whose caller made the change.
	AccountID string
	// AppID is the application the change touched, "" for account-level routes.
	AppID string
	// ActorType is ActorSession, ActorAccountKey or ActorAPIKey; ActorID the session's
	// token id or the scoped key's id; ActorName the username or the key's name.
	ActorType string
	ActorID   string
	ActorName string
	IP        string
	Method    string
	// Route is the router's pattern; Path the path requested.
	Route      string
	Path       string
	RecordType string
	RecordID   string
	Status     int
	// Before and After are JSON objects of the changed members of an update ("" for
	// none).
	Before    string
	After     string
	CreatedAt time.Time
	// Seq, PrevHash and Hash chain the entries of one account (tamper evidence): Seq counts
	// from 1 without gaps, PrevHash is the Hash of the entry before (of seq-1; "" for the
	// first), Hash is AuditHash of the entry. The store sets them in AppendAudit; entries
	// stored before the chain existed have Seq 0 and are outside it.
	Seq      int64
	PrevHash string
	Hash     string
}

// AuditHash answers the chain hash of e: SHA-256, hex, over a canonical encoding of every
// member but Hash itself (a JSON array in a fixed order, so that no two different entries
// encode alike). Editing any stored member, or the link to the entry before, changes it.
func AuditHash(e AuditEntry) string {
	b, err := json.Marshal([]any{"keyward-audit-v1", e.AccountID, e.Seq, e.PrevHash, e.ID, e.AppID, e.ActorType, e.ActorID,
		e.ActorName, e.IP, e.Method, e.Route, e.Path, e.RecordType, e.RecordID, e.Status, e.Before, e.After,
		Truncate(e.CreatedAt).UnixMilli()})
	if err != nil { // strings and integers always encode
		panic("storage: audit hash: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// AuditQuery selects audit entries, newest first. Empty members do not filter; an empty
// AccountID lists every account (administrators).
type AuditQuery struct {
	AccountID  string
	AppID      string
	ActorID    string
	RecordType string
	// Since (inclusive) and Until (exclusive) bound CreatedAt when not zero.
	Since time.Time
	Until time.Time
	Page  Page
}

// AuditStore persists the audit log.
type AuditStore interface {
	// AppendAudit inserts the entries (a batch), in order, each at the end of its account's
	// chain: the store sets Seq (the account's last plus one), PrevHash (the last one's
	// Hash) and Hash, whatever the caller put there. Appends racing on several processes
	// still form one chain per account (a unique sequence per account, retried on
	// conflict). An entry whose id is stored already is skipped, so that a batch retried
	// after an unclear failure writes each entry once.
	AppendAudit(ctx context.Context, entries []AuditEntry) error
	// ListAudit answers one page, newest first, and the total of matches.
	ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, int, error)
	// DeleteAuditBefore removes entries created before t and answers how many. It removes
	// only the start of each account's chain: never an entry after a kept one (whatever
	// the clocks of the nodes that wrote them said), and never the last entry of an
	// account, so that the chain goes on from it and what is kept still verifies.
	DeleteAuditBefore(ctx context.Context, t time.Time) (int, error)
	// AuditAccounts answers the accounts that have chained entries (Seq > 0), sorted.
	AuditAccounts(ctx context.Context) ([]string, error)
	// AuditChain answers up to limit chained entries of the account with Seq > afterSeq,
	// in Seq order: the walk of tamper verification.
	AuditChain(ctx context.Context, accountID string, afterSeq int64, limit int) ([]AuditEntry, error)
}

// AuditRecoverer is an engine that stages a change's audit entry before the change's
// write and appends it to the chain after (MongoDB: FerretDB 1.24 has no multi-document
// transactions; the change's document carries the staged entry's id, so the two cannot
// be separated). RecoverAudit appends the staged entries whose change was made and whose
// node stopped before appending them, drops those whose change was never made (once
// older than any write in flight), and answers how many it appended. The audit writer
// (core/audit) runs it at start and then periodically, sparing the entries staged less
// than minAge ago (their own change is appending them). An engine that writes the entry
// in the change's own transaction (SQLite) recovers only the parts of bulk entries
// (AuditParts) that a stopped node left unsettled.
type AuditRecoverer interface {
	RecoverAudit(ctx context.Context, minAge time.Duration) (int, error)
}

// AuditPartSettler appends the one entry of a bulk request whose records were each
// changed in a write of their own, each write storing its part (storage.AuditParts).
// SettleAuditParts merges the stored parts of group whose changes were made
// (MergeAuditParts), appends the entry at the end of its account's chain and removes the
// parts, all at once (SQLite: one transaction) or so that a retry appends it once
// (MongoDB); parts whose change was not made are dropped. It reports whether it appended
// an entry (false: no part was stored). The HTTP edge calls it once the request's writes
// are done, before the answer; RecoverAudit settles what a stopped node left.
type AuditPartSettler interface {
	SettleAuditParts(ctx context.Context, group string) (bool, error)
}

// MergeAuditParts answers the one entry the parts of a bulk request make: the first
// part's entry (its id: a part settled again is appended once) with every part's before
// and after merged (each a JSON object keyed by record id), at the time of the last part.
// Parts are given in the order they were stored.
func MergeAuditParts(parts []AuditEntry) (AuditEntry, error) {
	e := parts[0]
	before, after := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for _, p := range parts {
		for _, side := range []struct {
			src string
			dst map[string]json.RawMessage
		}{{p.Before, before}, {p.After, after}} {
			if side.src == "" {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(side.src), &m); err != nil {
				return AuditEntry{}, fmt.Errorf("storage: audit part %s: %w", p.ID, err)
			}
			for k, v := range m {
				side.dst[k] = v
			}
		}
		if p.CreatedAt.After(e.CreatedAt) {
			e.CreatedAt = p.CreatedAt
		}
	}
	b, err := json.Marshal(before)
	if err != nil {
		return AuditEntry{}, err
	}
	a, err := json.Marshal(after)
	if err != nil {
		return AuditEntry{}, err
	}
	e.Before, e.After = string(b), string(a)
	return e, nil
}
