package storage

import (
	"context"
	"time"
)

// ClientSession is the durable copy of a client session. The live session is in the
// cluster engine (every call touches it there); this copy is written at init and login
// and then lazily, so that sessions survive a restart of an embedded node, and is read
// only when the cluster engine does not know a token.
type ClientSession struct {
	// TokenHash is the SHA-256 (hex) of the session token; the token itself is never
	// stored, as it is a bearer credential.
	TokenHash string
	AppID     string
	AccountID string
	UserID    string // "" before login
	Username  string
	HWID      string
	IP        string
	Country   string
	Version   string
	CreatedAt time.Time
	LoginAt   time.Time
	// ExpiresAt is the session's expiry as of its last write.
	ExpiresAt time.Time
	// ExtendOnly, in a save, moves a stored copy's ExpiresAt later and never creates a
	// copy nor changes its other fields: a call's new expiry, marked after the call
	// touched its live session, must not bring back a copy that an end or a kill deleted
	// meanwhile (the kill would be undone by the next restore), nor undo a sign-in written
	// since the call read its session, nor shorten an expiry another node wrote later. It
	// is not stored.
	ExtendOnly bool
}

// ClientSessionStore persists the durable copies of client sessions.
type ClientSessionStore interface {
	// SaveClientSessions inserts or replaces the sessions (by TokenHash) in one write;
	// an ExtendOnly one only moves a stored copy's ExpiresAt later.
	// A session of an app that does not exist may be saved; it is never answered once
	// the app is gone (the app's delete sweeps it).
	SaveClientSessions(ctx context.Context, ss []ClientSession) error
	// SaveClientRound saves the sessions (as SaveClientSessions) and records the logins
	// (as UserStore.RecordLogins) of one round of the client API's group commit: on SQLite
	// in one transaction, with the events of the context's EventOutbox (a login's
	// session, last login and events stored together or not at all); on MongoDB (FerretDB
	// 1.24 has no multi-document transactions) as two writes, both done before it returns,
	// so a login's answer, which waits for the round, waits for both.
	SaveClientRound(ctx context.Context, ss []ClientSession, logins []UserLogin) error
	// GetClientSession reads one session by token hash; ErrNotFound when absent (whether
	// or not it has expired: the caller judges ExpiresAt).
	GetClientSession(ctx context.Context, tokenHash string) (ClientSession, error)
	// DeleteClientSessions removes the sessions with these token hashes; absent ones are
	// no error. On SQLite the events of the context's EventOutbox (a session's end) are
	// stored in the delete's transaction; MongoDB leaves them to the caller.
	DeleteClientSessions(ctx context.Context, tokenHashes []string) error
	// DeleteUserClientSessions removes every session of the user and answers how many,
	// with the events of the context's EventOutbox as DeleteClientSessions (a kill's).
	DeleteUserClientSessions(ctx context.Context, appID, userID string) (int, error)
	// DeleteExpiredClientSessions removes sessions with ExpiresAt <= now and answers how
	// many went.
	DeleteExpiredClientSessions(ctx context.Context, now time.Time) (int, error)
}

// Then answers the one save that stands for c followed by later: a later full copy
// replaces c; a later ExtendOnly one only moves c's expiry later (c stays a creation if it
// was one). The archive merges its marks with it, and the engines a batch that names a
// token hash twice.
func (c ClientSession) Then(later ClientSession) ClientSession {
	if !later.ExtendOnly {
		return later
	}
	if later.ExpiresAt.After(c.ExpiresAt) {
		c.ExpiresAt = later.ExpiresAt
	}
	return c
}

// CoalesceClientSessions answers ss with one save per token hash (Then, in order), in
// the order of each hash's first save.
func CoalesceClientSessions(ss []ClientSession) []ClientSession {
	out := make([]ClientSession, 0, len(ss))
	at := make(map[string]int, len(ss))
	for _, c := range ss {
		if i, seen := at[c.TokenHash]; seen {
			out[i] = out[i].Then(c)
			continue
		}
		at[c.TokenHash] = len(out)
		out = append(out, c)
	}
	return out
}
