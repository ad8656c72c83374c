package audit

import (
	"context"

	"github.com/keyward/keyward/storage"
)

// Own marks ctx for the one store call that makes a change publishing no events of its
// own (an API key's, a passkey's, a socket hook's, a store's or account settings' change):
// the engines take the request's audit draft (storage.AuditOutbox) only in a write that
// carries an event outbox, so that a service's other store calls (its reads, a side
// write) never take it. An outbox with no events is that mark: on SQLite the entry is
// appended in the change's transaction, on MongoDB staged and confirmed by its write.
// A change that has events uses events.Begin instead, whose outbox is the mark.
//
// Without a draft in ctx (no audited request) ctx is answered as it is.
func Own(ctx context.Context) context.Context {
	if storage.AuditOutboxFrom(ctx) == nil || storage.EventOutboxFrom(ctx) != nil {
		return ctx
	}
	return storage.WithEventOutbox(ctx, noEvents{})
}

// noEvents is the outbox of a change that has none: it gives nothing to write.
type noEvents struct{}

func (noEvents) Take() []storage.EventRecord  { return nil }
func (noEvents) Stored([]storage.EventRecord) {}
