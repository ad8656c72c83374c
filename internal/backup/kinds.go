package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keyward/keyward/storage"
)

// kind is one record kind of the archive and how its records go into a store.
type kind struct {
	name string
	// put decodes lines (JSON of the kind's record type) and writes them into st. A
	// record whose parent is not there (created while the backup was being read, after its
	// parent's kind was) is skipped and counted, not an error.
	put func(ctx context.Context, st storage.Store, lines [][]byte) (skipped int, err error)
	// decode decodes one line, for the checks before a restore.
	decode func(line []byte) (any, error)
}

// kinds is every kind in import order: parents before their children. One line per kind.
var kinds = []kind{
	each(storage.KindAccounts, storage.Store.CreateAccount),
	each(storage.KindAccountTokens, storage.Store.CreateAccountToken),
	each(storage.KindAPIKeys, storage.Store.CreateAPIKey),
	each(storage.KindOwnerSessions, storage.Store.CreateOwnerSession),
	batch(storage.KindRecoveryCodes, archived(storage.ArchiveStore.RestoreRecoveryCodes)),
	each(storage.KindPasskeys, storage.Store.CreatePasskey),
	each(storage.KindRevocations, func(st storage.Store, ctx context.Context, r storage.Revocation) error {
		return st.RevokeToken(ctx, r.ID, r.ExpiresAt)
	}),
	each(storage.KindApps, storage.Store.CreateApp),
	each(storage.KindUsers, storage.Store.CreateUser),
	batch(storage.KindLicenses, storage.Store.CreateLicenses),
	each(storage.KindDevices, storage.Store.CreateDevice),
	batch(storage.KindAppTokens, storage.Store.CreateTokens),
	batch(storage.KindVariables, storage.Store.CreateVariables),
	each(storage.KindFiles, storage.Store.CreateFile),
	batch(storage.KindRules, storage.Store.CreateRules),
	each(storage.KindWSHooks, storage.Store.CreateWSHook),
	each(storage.KindIntegrations, storage.Store.CreateIntegration),
	each(storage.KindStoreConnections, storage.Store.CreateStoreConnection),
	each(storage.KindStoreProducts, func(st storage.Store, ctx context.Context, p storage.StoreProduct) error {
		_, err := st.PutStoreProduct(ctx, p)
		return err
	}),
	each(storage.KindOrders, storage.Store.CreateOrder),
	each(storage.KindOrderEvents, storage.Store.AddOrderEvent),
	batch(storage.KindDeliveries, storage.Store.CreateDeliveries),
	// CreateDeliveries puts each delivery where its state says: an older archive's
	// finished deliveries, carried in the queue's kind, land in the history (countedAs).
	batch(storage.KindDeliveryHistory, storage.Store.CreateDeliveries),
	each(storage.KindDeliveryAttempts, storage.Store.AddDeliveryAttempt),
	batch(storage.KindClientSessions, storage.Store.SaveClientSessions),
	batch(storage.KindLogs, storage.Store.InsertLogs),
	// A purge not finished when the backup was taken: the node that opens the restored
	// data finishes it, to its cutoff.
	each(storage.KindLogPurges, storage.Store.BeginLogPurge),
	batch(storage.KindAudit, archived(storage.ArchiveStore.RestoreAudit)),
	batch(storage.KindEvents, archived(storage.ArchiveStore.RestoreEvents)),
	each(storage.KindEventCursors, func(st storage.Store, ctx context.Context, c storage.EventCursor) error {
		return st.SetEventCursor(ctx, c.Consumer, c.Pos)
	}),
}

// countedAs names the kinds whose records a newer version keeps elsewhere: the check of a
// restore compares the sum of such a group, not each member. Finished deliveries moved
// from the queue (webhook_deliveries) to the history (webhook_history) in schema 33, so
// an older archive's or database's deliveries count as both.
var countedAs = map[string]string{storage.KindDeliveryHistory: storage.KindDeliveries}

// countGroups sums counts by countedAs.
func countGroups(counts map[string]int) map[string]int {
	out := make(map[string]int, len(counts))
	for k, n := range counts {
		if g, ok := countedAs[k]; ok {
			k = g
		}
		out[k] += n
	}
	return out
}

// KindNames answers the archive's kinds in import order.
func KindNames() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

func kindByName(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

// archived adapts a restore method of storage.ArchiveStore to a Store.
func archived[T any](f func(storage.ArchiveStore, context.Context, []T) error) func(storage.Store, context.Context, []T) error {
	return func(st storage.Store, ctx context.Context, recs []T) error {
		as, ok := st.(storage.ArchiveStore)
		if !ok {
			return fmt.Errorf("store %T cannot restore archives", st)
		}
		return f(as, ctx, recs)
	}
}

func decodeAll[T any](lines [][]byte) ([]T, error) {
	out := make([]T, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal(l, &out[i]); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
	}
	return out, nil
}

func decoder[T any]() func([]byte) (any, error) {
	return func(line []byte) (any, error) {
		var r T
		err := json.Unmarshal(line, &r)
		return r, err
	}
}

// each writes records one by one.
func each[T any](name string, create func(storage.Store, context.Context, T) error) kind {
	return kind{name: name, decode: decoder[T](), put: func(ctx context.Context, st storage.Store, lines [][]byte) (int, error) {
		recs, err := decodeAll[T](lines)
		if err != nil {
			return 0, err
		}
		skipped := 0
		for i, r := range recs {
			err := create(st, ctx, r)
			if errors.Is(err, storage.ErrNotFound) {
				skipped++
				continue
			}
			if err != nil {
				return skipped, fmt.Errorf("record %d: %w", i, err)
			}
		}
		return skipped, nil
	}}
}

// batch writes records with one call; when a parent is missing it writes them one by one
// to skip the orphans alone.
func batch[T any](name string, create func(storage.Store, context.Context, []T) error) kind {
	one := each(name, func(st storage.Store, ctx context.Context, r T) error { return create(st, ctx, []T{r}) })
	return kind{name: name, decode: decoder[T](), put: func(ctx context.Context, st storage.Store, lines [][]byte) (int, error) {
		recs, err := decodeAll[T](lines)
		if err != nil {
			return 0, err
		}
		err = create(st, ctx, recs)
		if errors.Is(err, storage.ErrNotFound) {
			return one.put(ctx, st, lines)
		}
		return 0, err
	}}
}
