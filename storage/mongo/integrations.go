package mongo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.IntegrationStore = (*Store)(nil)
	_ storage.DeliveryStore    = (*Store)(nil)
)

// integrationDoc is an integration as stored; zero times are left out (omitempty).
type integrationDoc struct {
	ID                  string    `bson:"_id"`
	Version             int64     `bson:"version"` // see versioned
	AppID               string    `bson:"appId"`
	Name                string    `bson:"name"`
	Kind                string    `bson:"kind"`
	URL                 string    `bson:"url"`
	Events              []string  `bson:"events"`
	Enabled             bool      `bson:"enabled"`
	Secret              string    `bson:"secret"`
	ConsecutiveFailures int       `bson:"consecutiveFailures"`
	DisabledReason      string    `bson:"disabledReason"`
	CreatedAt           time.Time `bson:"createdAt,omitempty"`
	UpdatedAt           time.Time `bson:"updatedAt,omitempty"`
}

func toIntegrationDoc(i storage.Integration, version int64) integrationDoc {
	return integrationDoc{
		ID:                  i.ID,
		Version:             version,
		AppID:               i.AppID,
		Name:                i.Name,
		Kind:                i.Kind,
		URL:                 i.URL,
		Events:              noneAsNil(i.Events),
		Enabled:             i.Enabled,
		Secret:              i.Secret,
		ConsecutiveFailures: i.ConsecutiveFailures,
		DisabledReason:      i.DisabledReason,
		CreatedAt:           storage.Truncate(i.CreatedAt),
		UpdatedAt:           storage.Truncate(i.UpdatedAt),
	}
}

func (d integrationDoc) integration() storage.Integration {
	return storage.Integration{
		ID:                  d.ID,
		AppID:               d.AppID,
		Name:                d.Name,
		Kind:                d.Kind,
		URL:                 d.URL,
		Events:              noneAsNil(d.Events),
		Enabled:             d.Enabled,
		Secret:              d.Secret,
		ConsecutiveFailures: d.ConsecutiveFailures,
		DisabledReason:      d.DisabledReason,
		CreatedAt:           fromDate(d.CreatedAt),
		UpdatedAt:           fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: an integration's claims belong to its app.
func (d integrationDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// noneAsNil answers nil for an empty slice, so that no events (or no payload) read back
// the same whether they were given as nil or empty, as in the SQLite engine.
func noneAsNil[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

// CreateIntegration inserts i while its app exists (ErrNotFound otherwise, see insertOwned).
func (s *Store) CreateIntegration(ctx context.Context, i storage.Integration) error {
	if err := storage.SealIntegration(s.sealer, &i); err != nil {
		return wrap("create integration", err)
	}
	return s.insertOwned(ctx, "create integration", s.integrations, []any{toIntegrationDoc(i, newVersion())},
		bson.D{{Key: "_id", Value: i.ID}}, s.appParents([]string{i.AppID}))
}

// GetIntegration reads the app's integration by id.
func (s *Store) GetIntegration(ctx context.Context, appID, id string) (storage.Integration, error) {
	d, err := findDoc[integrationDoc](ctx, s.integrations, "get integration", byApp(appID, id))
	if err != nil {
		return storage.Integration{}, err
	}
	return s.openIntegration("get integration", d)
}

// ListIntegrations answers every integration of the app, oldest first.
func (s *Store) ListIntegrations(ctx context.Context, appID string) ([]storage.Integration, error) {
	list, err := findAll(ctx, s.integrations, "list integrations", bson.D{{Key: "appId", Value: appID}}, sortBy("createdAt", false),
		integrationDoc.integration)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if err := storage.OpenIntegration(s.sealer, &list[i]); err != nil {
			return nil, wrap("list integrations", err)
		}
	}
	return list, nil
}

// openIntegration converts a stored document, opening its sealed secret.
func (s *Store) openIntegration(op string, d integrationDoc) (storage.Integration, error) {
	i := d.integration()
	if err := storage.OpenIntegration(s.sealer, &i); err != nil {
		return storage.Integration{}, wrap(op, err)
	}
	return i, nil
}

// UpdateIntegration applies fn to the app's integration under a version claim (see
// updateDoc). The id, the app and the creation time are kept.
func (s *Store) UpdateIntegration(ctx context.Context, appID, id string, fn func(*storage.Integration) error) (storage.Integration, error) {
	d, err := updateDoc(ctx, s, s.integrations, "update integration", byApp(appID, id),
		func(cur integrationDoc) (integrationDoc, error) {
			next, err := s.openIntegration("update integration", cur)
			if err != nil {
				return integrationDoc{}, err
			}
			if err := fn(&next); err != nil {
				return integrationDoc{}, err
			}
			next.ID = cur.ID
			if err := storage.SealIntegration(s.sealer, &next); err != nil {
				return integrationDoc{}, wrap("update integration", err)
			}
			doc := toIntegrationDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.Integration{}, err
	}
	return s.openIntegration("update integration", d)
}

// ofIntegration filters the deliveries or attempts of one integration of the app.
func ofIntegration(appID, integrationID string) bson.D {
	return bson.D{{Key: "appId", Value: appID}, {Key: "integrationId", Value: integrationID}}
}

// DeleteIntegration removes the app's integration, then its deliveries, then their
// attempts. Without transactions these are three steps, the integration first: a delivery
// queued meanwhile for it is removed by ClaimDeliveries, an attempt recorded meanwhile
// goes with PurgeDeliveries. When the integration is already gone (a delete that stopped
// part-way), what is left of it in the app is swept all the same and ErrNotFound answered;
// the filters carry the app, so another app's records are never touched.
func (s *Store) DeleteIntegration(ctx context.Context, appID, id string) error {
	const op = "delete integration"
	res, err := s.integrations.DeleteOne(ctx, byApp(appID, id))
	if err != nil {
		return wrap(op, err)
	}
	for _, coll := range []*mongo.Collection{s.deliveries, s.history, s.attempts} {
		if _, err := coll.DeleteMany(ctx, ofIntegration(appID, id)); err != nil {
			return wrap(op+": "+coll.Name(), err)
		}
	}
	if res.DeletedCount == 0 {
		return wrap(op, mongo.ErrNoDocuments)
	}
	return nil
}

// deliveryDoc is a delivery as stored. Unlike other records, every time is stored, a zero
// one as the zero date (year 1): the queue's comparisons ($lte now for due and lease, $lt
// for the purge) must treat a zero time as the earliest instant, as SQLite's 0 is, where
// an absent field would match nothing.
type deliveryDoc struct {
	ID            string    `bson:"_id"`
	Version       int64     `bson:"version"` // see versioned
	AppID         string    `bson:"appId"`
	IntegrationID string    `bson:"integrationId"`
	EventID       string    `bson:"eventId"`
	Event         string    `bson:"event"`
	Payload       []byte    `bson:"payload"`
	State         string    `bson:"state"`
	Attempts      int       `bson:"attempts"`
	NextAttemptAt time.Time `bson:"nextAttemptAt"`
	LeaseOwner    string    `bson:"leaseOwner"`
	LeaseUntil    time.Time `bson:"leaseUntil"`
	LastError     string    `bson:"lastError"`
	Sent          []byte    `bson:"sent,omitempty"` // see storage.Delivery.Sent
	CreatedAt     time.Time `bson:"createdAt"`
	UpdatedAt     time.Time `bson:"updatedAt"`
	// AuditPending is the marker of the delivery's last audited change (auditMarker: a
	// redelivery's entry), kept by every later write and move (updateDelivery).
	AuditPending string `bson:"auditPending,omitempty"`
}

func toDeliveryDoc(d storage.Delivery, version int64) deliveryDoc {
	return deliveryDoc{
		ID:            d.ID,
		Version:       version,
		AppID:         d.AppID,
		IntegrationID: d.IntegrationID,
		EventID:       d.EventID,
		Event:         d.Event,
		Payload:       noneAsNil(d.Payload),
		State:         d.State,
		Attempts:      d.Attempts,
		NextAttemptAt: storage.Truncate(d.NextAttemptAt),
		LeaseOwner:    d.LeaseOwner,
		LeaseUntil:    storage.Truncate(d.LeaseUntil),
		LastError:     d.LastError,
		Sent:          noneAsNil(d.Sent),
		CreatedAt:     storage.Truncate(d.CreatedAt),
		UpdatedAt:     storage.Truncate(d.UpdatedAt),
	}
}

func (d deliveryDoc) delivery() storage.Delivery {
	return storage.Delivery{
		ID:            d.ID,
		AppID:         d.AppID,
		IntegrationID: d.IntegrationID,
		EventID:       d.EventID,
		Event:         d.Event,
		Payload:       noneAsNil(d.Payload),
		State:         d.State,
		Attempts:      d.Attempts,
		NextAttemptAt: fromDate(d.NextAttemptAt),
		LeaseOwner:    d.LeaseOwner,
		LeaseUntil:    fromDate(d.LeaseUntil),
		LastError:     d.LastError,
		Sent:          noneAsNil(d.Sent),
		CreatedAt:     fromDate(d.CreatedAt),
		UpdatedAt:     fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a delivery's claims belong to its app.
func (d deliveryDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// claimRounds bounds the candidate reads of one ClaimDeliveries: a round whose candidates
// were all taken by other claimers (or were orphans) reads again, the taken ones being no
// longer due.
const claimRounds = 4

// errNotClaimable aborts the claim of a delivery that another claimer got first.
var errNotClaimable = errors.New("delivery no longer claimable")

// claimable reports whether d is due and not leased at now.
func claimable(d deliveryDoc, now time.Time) bool {
	return d.State == storage.DeliveryPending && !d.NextAttemptAt.After(now) && !d.LeaseUntil.After(now)
}

// ClaimDeliveries leases up to n due deliveries to owner.
//
// FerretDB 1.x updates are not atomic (see updateDoc), so a conditional update or
// findAndModify cannot hand a delivery to one claimer only. Instead: read a few more due
// candidates than wanted, oldest nextAttemptAt first, then claim each through updateDoc,
// whose fn checks again that the delivery is pending, due and not leased. The version
// claim lets exactly one claimer write each version; a claimer that loses re-reads the
// delivery, finds the winner's lease and skips it. Candidates whose integration is gone
// are deleted (the contract's orphans). The answer is sorted as the contract says.
//
// When some deliveries were leased before an error, they are answered without the error:
// they are this owner's until the lease ends, and sending them is better than leaving them.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, n int) ([]storage.Delivery, error) {
	const op = "claim deliveries"
	if n <= 0 {
		return nil, nil
	}
	if lease < time.Millisecond {
		// A lease ending at now (at the stored precision) would leave the delivery claimable.
		return nil, fmt.Errorf("mongo: %s: lease %v is shorter than a millisecond", op, lease)
	}
	now = storage.Truncate(now)
	until := storage.Truncate(now.Add(lease))
	var out []storage.Delivery
	finish := func(err error) ([]storage.Delivery, error) {
		slices.SortFunc(out, func(a, b storage.Delivery) int {
			return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), strings.Compare(a.ID, b.ID))
		})
		if err != nil && len(out) == 0 {
			return nil, err
		}
		return out, nil
	}
	alive := map[[2]string]bool{} // integration (app, id) → exists, for this call
	for range claimRounds {
		want := n - len(out)
		limit := want + min(want, 100)
		cands, err := s.dueCandidates(ctx, now, limit)
		if err != nil {
			return finish(wrap(op, err))
		}
		for _, c := range cands {
			if len(out) == n {
				break
			}
			key := [2]string{c.AppID, c.IntegrationID}
			ok, seen := alive[key]
			if !seen {
				var err error
				ok, err = exists(ctx, s.integrations, byApp(c.AppID, c.IntegrationID))
				if err != nil {
					return finish(wrap(op+": check integration", err))
				}
				alive[key] = ok
			}
			if !ok {
				if _, err := s.deliveries.DeleteOne(ctx, bson.D{{Key: "_id", Value: c.ID}, {Key: "integrationId", Value: c.IntegrationID}}); err != nil {
					return finish(wrap(op+": remove orphan", err))
				}
				continue
			}
			if c.LeaseOwner != "" {
				// Its lease ended unfinished: the node died mid-attempt, or mid-move to the
				// history (see moveDelivery). Only the second is settled already.
				stale, _, err := s.queuedCopyIsStale(ctx, c)
				if err != nil {
					return finish(wrap(op+": check history", err))
				}
				if stale {
					s.dropStaleQueued(ctx, c)
					continue
				}
			}
			d, err := updateDelivery(ctx, s, op, c.ID, &c,
				func(cur deliveryDoc) (deliveryDoc, error) {
					if !claimable(cur, now) {
						return deliveryDoc{}, errNotClaimable
					}
					next := cur
					next.Version++
					next.LeaseOwner, next.LeaseUntil = owner, until
					return next, nil
				})
			switch {
			case errors.Is(err, errNotClaimable), errors.Is(err, storage.ErrNotFound):
				continue // another claimer got it, or it was deleted meanwhile
			case err != nil:
				return finish(err)
			}
			out = append(out, d.delivery())
		}
		if len(out) == n || len(cands) < limit {
			break // done, or no more were due when read
		}
	}
	return finish(nil)
}

// dueCandidates reads up to limit deliveries claimable at now, oldest nextAttemptAt first,
// whole: the claim starts from them without reading each again (FerretDB decodes every
// document of the queue for this query anyway, a projection saves nothing there).
// Every delivery stores leaseUntil (the zero date when not leased), so one $lte covers
// both the unleased and the expired lease.
func (s *Store) dueCandidates(ctx context.Context, now time.Time, limit int) ([]deliveryDoc, error) {
	cur, err := s.deliveries.Find(ctx, bson.D{
		{Key: "state", Value: storage.DeliveryPending},
		{Key: "nextAttemptAt", Value: bson.D{{Key: "$lte", Value: now}}},
		{Key: "leaseUntil", Value: bson.D{{Key: "$lte", Value: now}}},
	}, options.Find().
		SetSort(sortBy("nextAttemptAt", false)).
		SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	var out []deliveryDoc
	if err := cur.All(ctx, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// replaceClaimedByID is replaceClaimed with the version compared by a read after the
// claim rather than in the replace's filter. It is as safe: the claim of version v+1 is
// held by one updater at a time, and the document can leave version v only through the
// holder of that claim, so once the holder has read v back, v is what its replace
// overwrites. Like replaceClaimed it bounds its read and write to half the claim's
// lease, after which a claim is taken for abandoned.
func (s *Store) replaceClaimedByID(ctx context.Context, coll *mongo.Collection, cur versioned, next any) (bool, error) {
	id, version, _ := cur.claimKey()
	release, claimed, err := s.claimNextVersion(ctx, coll, cur)
	if !claimed {
		return false, err
	}
	defer release()

	wctx, cancel := context.WithTimeout(ctx, claimLease/2)
	defer cancel()
	byID := bson.D{{Key: "_id", Value: id}}
	var stored struct {
		Version int64 `bson:"version"`
	}
	err = coll.FindOne(wctx, byID, options.FindOne().SetProjection(bson.D{{Key: "version", Value: 1}})).Decode(&stored)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, nil // deleted meanwhile: the caller's next read answers not found
	case err != nil:
		return false, err
	case stored.Version != version:
		return false, nil // another updater wrote first
	}
	res, err := coll.ReplaceOne(wctx, byID, next)
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

// attemptDoc is a delivery attempt as stored. Attempts are never updated, so they carry no
// version; CreatedAt is always stored, as for deliveries (the purge compares it).
type attemptDoc struct {
	ID            string    `bson:"_id"`
	AppID         string    `bson:"appId"`
	IntegrationID string    `bson:"integrationId"`
	DeliveryID    string    `bson:"deliveryId"`
	Event         string    `bson:"event"`
	Attempt       int       `bson:"attempt"`
	Success       bool      `bson:"success"`
	StatusCode    int       `bson:"statusCode"`
	LatencyMs     int64     `bson:"latencyMs"`
	Error         string    `bson:"error"`
	Response      string    `bson:"response"`
	CreatedAt     time.Time `bson:"createdAt"`
}

func toAttemptDoc(a storage.DeliveryAttempt) attemptDoc {
	return attemptDoc{
		ID:            a.ID,
		AppID:         a.AppID,
		IntegrationID: a.IntegrationID,
		DeliveryID:    a.DeliveryID,
		Event:         a.Event,
		Attempt:       a.Attempt,
		Success:       a.Success,
		StatusCode:    a.StatusCode,
		LatencyMs:     a.Latency.Milliseconds(),
		Error:         a.Error,
		Response:      a.Response,
		CreatedAt:     storage.Truncate(a.CreatedAt),
	}
}

func (d attemptDoc) attempt() storage.DeliveryAttempt {
	return storage.DeliveryAttempt{
		ID:            d.ID,
		AppID:         d.AppID,
		IntegrationID: d.IntegrationID,
		DeliveryID:    d.DeliveryID,
		Event:         d.Event,
		Attempt:       d.Attempt,
		Success:       d.Success,
		StatusCode:    d.StatusCode,
		Latency:       time.Duration(d.LatencyMs) * time.Millisecond,
		Error:         d.Error,
		Response:      d.Response,
		CreatedAt:     fromDate(d.CreatedAt),
	}
}

// AddDeliveryAttempt records a; the latency is kept in whole milliseconds. There is no
// parent check: an attempt recorded as its integration is deleted goes with the purge.
//
// An attempt marked as its change's own store call (audit.Own: an integration's test) is
// inserted by insertOwned, so the audit entry is staged before and confirmed by the
// insert; attempts are never replaced, only purged, so the marker stays.
func (s *Store) AddDeliveryAttempt(ctx context.Context, a storage.DeliveryAttempt) error {
	return s.insertOwned(ctx, "add delivery attempt", s.attempts, []any{toAttemptDoc(a)}, nil, nil)
}

// ListDeliveryAttempts answers one page of the integration's attempts, newest first, and
// the total (two reads, see listDocs).
func (s *Store) ListDeliveryAttempts(ctx context.Context, appID, integrationID string, p storage.Page) ([]storage.DeliveryAttempt, int, error) {
	return listDocs(ctx, s.attempts, "list delivery attempts", ofIntegration(appID, integrationID), sortBy("createdAt", true), p,
		attemptDoc.attempt)
}

// PurgeDeliveries removes the finished deliveries (the history) updated before before,
// then the attempts created before it. On FerretDB both filter in Go: an hourly sweep of
// the history, which the queue's claims never read.
func (s *Store) PurgeDeliveries(ctx context.Context, before time.Time) (int, error) {
	const op = "purge deliveries"
	before = storage.Truncate(before)
	res, err := s.history.DeleteMany(ctx, bson.D{{Key: "updatedAt", Value: bson.D{{Key: "$lt", Value: before}}}})
	if err != nil {
		return 0, wrap(op, err)
	}
	if _, err := s.attempts.DeleteMany(ctx, bson.D{{Key: "createdAt", Value: bson.D{{Key: "$lt", Value: before}}}}); err != nil {
		return int(res.DeletedCount), wrap(op+": attempts", err)
	}
	return int(res.DeletedCount), nil
}
