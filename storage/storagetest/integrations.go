package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var integrationTests = []subtest{
	{"IntegrationRoundTrip", testIntegrationRoundTrip},
	{"IntegrationScopedToApp", testIntegrationScopedToApp},
	{"IntegrationUpdate", testIntegrationUpdate},
	{"IntegrationUpdateConcurrent", testIntegrationUpdateConcurrent},
	{"IntegrationDelete", testIntegrationDelete},
	{"IntegrationDeletedWithApp", testIntegrationDeletedWithApp},
	{"DeliveryRoundTrip", testDeliveryRoundTrip},
	{"DeliveryTimePrecision", testDeliveryTimePrecision},
	{"DeliveryClaim", testDeliveryClaim},
	{"DeliveryClaimOrphans", testDeliveryClaimOrphans},
	{"DeliveryClaimConcurrent", testDeliveryClaimConcurrent},
	{"DeliveryUpdate", testDeliveryUpdate},
	{"DeliveryUpdateConcurrent", testDeliveryUpdateConcurrent},
	{"DeliveryAttempts", testDeliveryAttempts},
	{"DeliveryPurge", testDeliveryPurge},
}

func fullIntegration(appID, name string) storage.Integration {
	n := seq.Add(1)
	return storage.Integration{
		ID:    fmt.Sprintf("int-%05d", n),
		AppID: appID,
		Name:  name,
		Kind:  "CUSTOM",
		URL:   "https://hooks.example.com/" + name + "?token=t0k3n",
		// Not sorted, with a repeat-free but order-sensitive list: it must read back as given.
		Events:              []string{"user.register", "license.used", "user.login", "app.paused"},
		Enabled:             true,
		Secret:              fmt.Sprintf("whsec_%032d", n),
		ConsecutiveFailures: 3,
		DisabledReason:      "disabled after 3 failures: " + name,
		CreatedAt:           ms(-10*24*time.Hour + time.Duration(n)*time.Millisecond),
		UpdatedAt:           ms(-time.Hour + 7*time.Millisecond),
	}
}

func minimalIntegration(appID string) storage.Integration {
	return storage.Integration{ID: uniq("int-min-"), AppID: appID}
}

func mustCreateIntegration(t *testing.T, s storage.Store, i storage.Integration) storage.Integration {
	t.Helper()
	if err := s.CreateIntegration(t.Context(), i); err != nil {
		t.Fatalf("CreateIntegration(%q): %v", i.ID, err)
	}
	return i
}

func wantIntegration(t *testing.T, s storage.Store, want storage.Integration) {
	t.Helper()
	got, err := s.GetIntegration(t.Context(), want.AppID, want.ID)
	if err != nil {
		t.Fatalf("GetIntegration(%q): %v", want.ID, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetIntegration(%q) differs: %s", want.ID, d)
	}
}

// wantIntegrations fails unless the app's integrations are exactly want, oldest first.
func wantIntegrations(t *testing.T, s storage.Store, appID string, want ...storage.Integration) {
	t.Helper()
	got, err := s.ListIntegrations(t.Context(), appID)
	if err != nil {
		t.Fatalf("ListIntegrations(%s): %v", appID, err)
	}
	sorted := ordered(want, func(a, b storage.Integration) int { return a.CreatedAt.Compare(b.CreatedAt) }, false)
	wantSame(t, "ListIntegrations("+appID+")", sorted, got)
}

// fullDelivery is a pending delivery of i due at next, every other field set.
func fullDelivery(i storage.Integration, next time.Time) storage.Delivery {
	n := seq.Add(1)
	return storage.Delivery{
		ID:            fmt.Sprintf("dlv-%05d", n),
		AppID:         i.AppID,
		IntegrationID: i.ID,
		EventID:       fmt.Sprintf("evt-%05d", n),
		Event:         "user.login",
		Payload:       fmt.Appendf(nil, `{"id":"evt-%05d","event":"user.login","data":{"username":"zoë"}}`, n),
		State:         storage.DeliveryPending,
		Attempts:      2,
		NextAttemptAt: next,
		LastError:     "HTTP 503 Service Unavailable",
		Sent:          fmt.Appendf(nil, `{"method":"POST","body":"e30=","n":%d}`, n),
		CreatedAt:     ms(-2 * time.Hour),
		UpdatedAt:     ms(-time.Minute + 3*time.Millisecond),
	}
}

func mustCreateDeliveries(t *testing.T, s storage.Store, ds ...storage.Delivery) []storage.Delivery {
	t.Helper()
	if err := s.CreateDeliveries(t.Context(), ds); err != nil {
		t.Fatalf("CreateDeliveries(%d deliveries): %v", len(ds), err)
	}
	return ds
}

// errPeek aborts the UpdateDelivery through which readDelivery reads: the contract has no
// GetDelivery.
var errPeek = errors.New("storagetest: read only")

// readDelivery reads the delivery through an UpdateDelivery whose fn aborts; false when
// it does not exist.
func readDelivery(t *testing.T, s storage.Store, id string) (storage.Delivery, bool) {
	t.Helper()
	var got storage.Delivery
	_, err := s.UpdateDelivery(t.Context(), id, func(d *storage.Delivery) error {
		got = *d
		return errPeek
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return storage.Delivery{}, false
	case !errors.Is(err, errPeek):
		t.Fatalf("UpdateDelivery(%q) with an aborting fn: error = %v, want fn's error", id, err)
	}
	return got, true
}

func wantDelivery(t *testing.T, s storage.Store, want storage.Delivery) {
	t.Helper()
	got, ok := readDelivery(t, s, want.ID)
	if !ok {
		t.Fatalf("delivery %q not found", want.ID)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("delivery %q differs: %s", want.ID, d)
	}
}

func wantNoDelivery(t *testing.T, s storage.Store, id, why string) {
	t.Helper()
	if _, ok := readDelivery(t, s, id); ok {
		t.Errorf("delivery %q still exists %s", id, why)
	}
}

// fullAttempt is attempt n of delivery d, made at at, every field set.
func fullAttempt(d storage.Delivery, n int, at time.Time) storage.DeliveryAttempt {
	return storage.DeliveryAttempt{
		ID:            uniq("att-"),
		AppID:         d.AppID,
		IntegrationID: d.IntegrationID,
		DeliveryID:    d.ID,
		Event:         d.Event,
		Attempt:       n,
		Success:       n%2 == 0,
		StatusCode:    500 + n,
		Latency:       time.Duration(n)*time.Second + 250*time.Millisecond,
		Error:         fmt.Sprintf("attempt %d: HTTP %d", n, 500+n),
		Response:      `{"error":"try later"}`,
		CreatedAt:     at,
	}
}

func mustAddAttempts(t *testing.T, s storage.Store, as ...storage.DeliveryAttempt) []storage.DeliveryAttempt {
	t.Helper()
	for _, a := range as {
		if err := s.AddDeliveryAttempt(t.Context(), a); err != nil {
			t.Fatalf("AddDeliveryAttempt(%q): %v", a.ID, err)
		}
	}
	return as
}

func attemptCreated(a storage.DeliveryAttempt) time.Time { return a.CreatedAt }

// wantAttempts fails unless the integration's attempts are exactly want, newest first,
// with the total.
func wantAttempts(t *testing.T, s storage.Store, appID, integrationID string, want ...storage.DeliveryAttempt) {
	t.Helper()
	got, total, err := s.ListDeliveryAttempts(t.Context(), appID, integrationID, storage.Page{Limit: storage.MaxPageSize})
	if err != nil {
		t.Fatalf("ListDeliveryAttempts(%s, %s): %v", appID, integrationID, err)
	}
	what := fmt.Sprintf("ListDeliveryAttempts(%s, %s)", appID, integrationID)
	if total != len(want) {
		t.Errorf("%s total = %d, want %d", what, total, len(want))
	}
	wantSame(t, what, newestFirst(want, attemptCreated), got)
}

// claim calls ClaimDeliveries and fails the test on an error.
func claim(t *testing.T, s storage.Store, owner string, now time.Time, lease time.Duration, n int) []storage.Delivery {
	t.Helper()
	got, err := s.ClaimDeliveries(t.Context(), owner, now, lease, n)
	if err != nil {
		t.Fatalf("ClaimDeliveries(%s, %v, %v, %d): %v", owner, now, lease, n, err)
	}
	return got
}

// leased answers ds as a claim by owner until until answers them.
func leased(owner string, until time.Time, ds ...storage.Delivery) []storage.Delivery {
	out := make([]storage.Delivery, len(ds))
	for i, d := range ds {
		d.LeaseOwner, d.LeaseUntil = owner, until
		out[i] = d
	}
	return out
}

func testIntegrationRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))

	newer := fullIntegration(app.ID, "newer")
	older := fullIntegration(app.ID, "older")
	older.CreatedAt = newer.CreatedAt.Add(-time.Hour)
	older.Kind, older.Secret, older.Enabled = "DISCORD", "", false
	older.Events = []string{"user.login"}
	minimal := minimalIntegration(app.ID) // zero times, no events
	twin := fullIntegration(app.ID, "twin")
	twin.CreatedAt = newer.CreatedAt // a tie, broken by id
	for _, i := range []storage.Integration{newer, older, minimal, twin} {
		mustCreateIntegration(t, s, i)
		wantIntegration(t, s, i)
	}
	wantIntegrations(t, s, app.ID, newer, older, minimal, twin)
	wantIntegrations(t, s, other.ID)
	wantIntegrations(t, s, "no-such-app")

	// An unknown app: ErrNotFound, and nothing written.
	orphan := fullIntegration("no-such-app", "orphan")
	wantNotFound(t, "CreateIntegration under an unknown app", s.CreateIntegration(ctx, orphan))
	_, err := s.GetIntegration(ctx, orphan.AppID, orphan.ID)
	wantNotFound(t, "GetIntegration of a refused integration", err)

	// A taken id, even under another app.
	dup := fullIntegration(other.ID, "dup")
	dup.ID = newer.ID
	wantConflict(t, "CreateIntegration with a taken id", s.CreateIntegration(ctx, dup))
	wantIntegration(t, s, newer)
	wantIntegrations(t, s, other.ID)
}

func testIntegrationScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "mine"))

	_, err := s.GetIntegration(ctx, other.ID, i.ID)
	wantNotFound(t, "GetIntegration from another app", err)
	_, err = s.UpdateIntegration(ctx, other.ID, i.ID, func(*storage.Integration) error {
		t.Error("UpdateIntegration called fn for an integration of another app")
		return nil
	})
	wantNotFound(t, "UpdateIntegration from another app", err)
	wantNotFound(t, "DeleteIntegration from another app", s.DeleteIntegration(ctx, other.ID, i.ID))
	wantIntegration(t, s, i)

	_, err = s.GetIntegration(ctx, app.ID, "missing")
	wantNotFound(t, "GetIntegration(missing)", err)
	_, err = s.UpdateIntegration(ctx, app.ID, "missing", func(*storage.Integration) error {
		t.Error("UpdateIntegration called fn for a missing integration")
		return nil
	})
	wantNotFound(t, "UpdateIntegration(missing)", err)
	wantNotFound(t, "DeleteIntegration(missing)", s.DeleteIntegration(ctx, app.ID, "missing"))
}

func testIntegrationUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, minimalIntegration(app.ID))
	bystander := mustCreateIntegration(t, s, fullIntegration(app.ID, "bystander"))

	want := fullIntegration(app.ID, "after")
	want.ID, want.CreatedAt = i.ID, i.CreatedAt
	want.Events = []string{"user.login", "user.register"}
	got, err := s.UpdateIntegration(ctx, app.ID, i.ID, func(x *storage.Integration) error {
		if d := diff(i, *x); d != "" {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateIntegration: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateIntegration result differs: %s", d)
	}
	wantIntegration(t, s, want)
	wantIntegration(t, s, bystander)

	// fn cannot move the integration: id, app and creation time are kept. The events
	// keep the new order.
	got, err = s.UpdateIntegration(ctx, app.ID, i.ID, func(x *storage.Integration) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", "other-app", ms(time.Hour)
		x.Events = []string{"user.register", "user.login", "license.used"}
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateIntegration: %v", err)
	}
	want.Events = []string{"user.register", "user.login", "license.used"}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateIntegration changing identity: result differs: %s", d)
	}
	wantIntegration(t, s, want)

	zero := storage.Integration{ID: i.ID, AppID: app.ID}
	got, err = s.UpdateIntegration(ctx, app.ID, i.ID, func(x *storage.Integration) error { *x = zero; return nil })
	if err != nil {
		t.Fatalf("UpdateIntegration to zero values: %v", err)
	}
	zero.CreatedAt = want.CreatedAt // kept
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateIntegration (zero values) result differs: %s", d)
	}
	wantIntegration(t, s, zero)

	errBoom := errors.New("boom")
	_, err = s.UpdateIntegration(ctx, app.ID, i.ID, func(x *storage.Integration) error {
		x.Name, x.Enabled = "never", true
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateIntegration with a failing fn: error = %v, want fn's error only", err)
	}
	wantIntegration(t, s, zero)
}

// testIntegrationUpdateConcurrent counts failures from many updaters at once, as the
// delivery workers of several nodes do: a lost update shows as a missing count.
func testIntegrationUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := minimalIntegration(app.ID)
	i.Enabled = true
	mustCreateIntegration(t, s, i)
	bystander := mustCreateIntegration(t, s, fullIntegration(app.ID, "bystander"))

	const workers = 20
	raceUpdates(t, workers, func(n int) error {
		_, err := s.UpdateIntegration(ctx, app.ID, i.ID, func(x *storage.Integration) error {
			x.ConsecutiveFailures++
			if n%2 == 0 {
				x.DisabledReason += "+"
			}
			return nil
		})
		return err
	})
	got, err := s.GetIntegration(ctx, app.ID, i.ID)
	if err != nil {
		t.Fatalf("GetIntegration: %v", err)
	}
	if got.ConsecutiveFailures != workers {
		t.Errorf("ConsecutiveFailures = %d after %d concurrent increments, want %d", got.ConsecutiveFailures, workers, workers)
	}
	if want := strings.Repeat("+", workers/2); got.DisabledReason != want {
		t.Errorf("DisabledReason = %q, want %q", got.DisabledReason, want)
	}
	wantIntegration(t, s, bystander)
}

// queue is an integration with deliveries and attempts.
type queue struct {
	i          storage.Integration
	deliveries []storage.Delivery
	attempts   []storage.DeliveryAttempt
}

// makeQueue creates an integration of the app with n due deliveries, each with one
// attempt.
func makeQueue(t *testing.T, s storage.Store, appID, name string, n int) queue {
	t.Helper()
	q := queue{i: mustCreateIntegration(t, s, fullIntegration(appID, name))}
	for k := range n {
		q.deliveries = append(q.deliveries, fullDelivery(q.i, ms(-time.Duration(k+1)*time.Minute)))
	}
	mustCreateDeliveries(t, s, q.deliveries...)
	for k, d := range q.deliveries {
		q.attempts = append(q.attempts, fullAttempt(d, 1, ms(time.Duration(k)*time.Second)))
	}
	mustAddAttempts(t, s, q.attempts...)
	return q
}

// wantQueue fails unless q's integration, deliveries and attempts are all stored as made.
func wantQueue(t *testing.T, s storage.Store, q queue) {
	t.Helper()
	wantIntegration(t, s, q.i)
	for _, d := range q.deliveries {
		wantDelivery(t, s, d)
	}
	wantAttempts(t, s, q.i.AppID, q.i.ID, q.attempts...)
}

// wantQueueGone fails unless nothing of q is left.
func wantQueueGone(t *testing.T, s storage.Store, q queue, why string) {
	t.Helper()
	_, err := s.GetIntegration(t.Context(), q.i.AppID, q.i.ID)
	wantNotFound(t, "GetIntegration "+why, err)
	for _, d := range q.deliveries {
		wantNoDelivery(t, s, d.ID, why)
	}
	wantAttempts(t, s, q.i.AppID, q.i.ID)
}

func testIntegrationDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	doomed := makeQueue(t, s, app.ID, "doomed", 3)
	kept := makeQueue(t, s, app.ID, "kept", 2)
	foreign := makeQueue(t, s, other.ID, "foreign", 2)

	if err := s.DeleteIntegration(ctx, app.ID, doomed.i.ID); err != nil {
		t.Fatalf("DeleteIntegration: %v", err)
	}
	wantQueueGone(t, s, doomed, "after DeleteIntegration")
	wantNotFound(t, "second DeleteIntegration", s.DeleteIntegration(ctx, app.ID, doomed.i.ID))
	wantIntegrations(t, s, app.ID, kept.i)
	wantQueue(t, s, kept)
	wantQueue(t, s, foreign)

	// Only the others' deliveries are due now.
	got := claim(t, s, "w", base, time.Minute, 10)
	wantIDs := recIDs(append(slices.Clone(kept.deliveries), foreign.deliveries...))
	if gotIDs := recIDs(got); !sameSet(gotIDs, wantIDs) {
		t.Errorf("ClaimDeliveries after DeleteIntegration = %v, want %v", gotIDs, wantIDs)
	}

	// The id is free again, and the integration starts empty.
	mustCreateIntegration(t, s, doomed.i)
	wantAttempts(t, s, app.ID, doomed.i.ID)
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func testIntegrationDeletedWithApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	doomedApp := mustCreateApp(t, s, fullApp("acc-1", "doomed"))
	keptApp := mustCreateApp(t, s, fullApp("acc-1", "kept"))
	doomed := []queue{makeQueue(t, s, doomedApp.ID, "one", 2), makeQueue(t, s, doomedApp.ID, "two", 1)}
	kept := makeQueue(t, s, keptApp.ID, "kept", 2)

	if err := s.DeleteApp(ctx, "acc-1", doomedApp.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	for _, q := range doomed {
		wantQueueGone(t, s, q, "after DeleteApp")
	}
	wantIntegrations(t, s, doomedApp.ID)
	wantQueue(t, s, kept)
	wantIntegrations(t, s, keptApp.ID, kept.i)

	// The app created again under the same id starts empty, and every id is free again.
	mustCreateApp(t, s, doomedApp)
	wantIntegrations(t, s, doomedApp.ID)
	for _, q := range doomed {
		mustCreateIntegration(t, s, q.i)
		mustCreateDeliveries(t, s, q.deliveries...)
		mustAddAttempts(t, s, q.attempts...)
		wantQueue(t, s, q)
	}
}

func testDeliveryRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))

	full := fullDelivery(i, ms(-time.Minute))
	leasedOne := fullDelivery(i, ms(time.Minute))
	leasedOne.LeaseOwner, leasedOne.LeaseUntil = "node-1", ms(2*time.Minute)
	binary := storage.Delivery{ID: uniq("dlv-bin-"), AppID: app.ID, IntegrationID: i.ID,
		Payload: []byte{0, 0xff, '\n', 0x80, 'x'}, State: storage.DeliveryPending}
	minimal := storage.Delivery{ID: uniq("dlv-min-"), AppID: app.ID, IntegrationID: i.ID, State: storage.DeliveryFailed}
	all := mustCreateDeliveries(t, s, full, leasedOne, binary, minimal)
	for _, d := range all {
		wantDelivery(t, s, d)
	}
	if err := s.CreateDeliveries(ctx, nil); err != nil {
		t.Errorf("CreateDeliveries(nil): %v", err)
	}

	// A batch with a taken id is refused whole.
	batch := []storage.Delivery{fullDelivery(i, base), fullDelivery(i, base), full, fullDelivery(i, base)}
	batch[2].Payload = []byte(`{"changed":true}`)
	wantConflict(t, "CreateDeliveries with a taken id", s.CreateDeliveries(ctx, batch))
	for k, d := range batch {
		if k != 2 {
			wantNoDelivery(t, s, d.ID, "after a refused CreateDeliveries")
		}
	}
	wantDelivery(t, s, full)
}

// testDeliveryTimePrecision writes every time field of deliveries and attempts at the
// edges of millisecond precision, and claims with an untruncated now in another zone.
func testDeliveryTimePrecision(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-time", "time"))
	i := mustCreateIntegration(t, s, minimalIntegration(app.ID))
	for _, tm := range timeCases {
		in := minimalIntegration(app.ID)
		in.CreatedAt, in.UpdatedAt = tm, tm.Add(time.Millisecond)
		mustCreateIntegration(t, s, in)
		wantIntegration(t, s, in)

		d := storage.Delivery{ID: uniq("dlv-t-"), AppID: app.ID, IntegrationID: i.ID, State: storage.DeliveryDelivered,
			NextAttemptAt: tm, LeaseUntil: tm.Add(999 * time.Millisecond), CreatedAt: tm.Add(-time.Millisecond),
			UpdatedAt: tm.Add(time.Millisecond)}
		mustCreateDeliveries(t, s, d)
		wantDelivery(t, s, d)

		a := storage.DeliveryAttempt{ID: uniq("att-t-"), AppID: app.ID, IntegrationID: i.ID, DeliveryID: d.ID,
			Latency: 1234567891 * time.Nanosecond, CreatedAt: tm}
		mustAddAttempts(t, s, a)
		a.Latency = 1234 * time.Millisecond // kept at millisecond precision
		got, _, err := s.ListDeliveryAttempts(t.Context(), app.ID, i.ID, storage.Page{Limit: storage.MaxPageSize})
		if err != nil {
			t.Fatalf("ListDeliveryAttempts: %v", err)
		}
		found := false
		for _, g := range got {
			if g.ID == a.ID {
				found = true
				if d := diff(a, g); d != "" {
					t.Errorf("attempt at %v differs: %s", tm, d)
				}
			}
		}
		if !found {
			t.Errorf("attempt at %v not listed", tm)
		}
	}

	// Records made with storage.Now(), claimed at an untruncated time.Now() in another zone.
	now := storage.Now()
	d := storage.Delivery{ID: uniq("dlv-now-"), AppID: app.ID, IntegrationID: i.ID, State: storage.DeliveryPending,
		NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	mustCreateDeliveries(t, s, d)
	at := time.Now().Add(time.Millisecond).In(time.FixedZone("Y", -3*3600))
	const lease = 30 * time.Second
	got := claim(t, s, "w", at, lease, 5)
	want := leased("w", storage.Truncate(at.Add(lease)), d)
	wantSame(t, "ClaimDeliveries at an untruncated now", want, got)
	wantDelivery(t, s, want[0])
}

func testDeliveryClaim(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	now := base
	const lease = 30 * time.Second

	due3m := fullDelivery(i, now.Add(-3*time.Minute))
	due1m := fullDelivery(i, now.Add(-time.Minute))
	due2m := fullDelivery(i, now.Add(-2*time.Minute))
	dueNow := fullDelivery(i, now) // NextAttemptAt <= now: due
	future := fullDelivery(i, now.Add(time.Millisecond))
	delivered := fullDelivery(i, now.Add(-5*time.Minute))
	delivered.State = storage.DeliveryDelivered
	failed := fullDelivery(i, now.Add(-5*time.Minute))
	failed.State = storage.DeliveryFailed
	leasedOther := fullDelivery(i, now.Add(-4*time.Minute))
	leasedOther.LeaseOwner, leasedOther.LeaseUntil = "other", now.Add(45*time.Second)
	expired := fullDelivery(i, now.Add(-90*time.Second)) // a worker died holding it
	expired.LeaseOwner, expired.LeaseUntil = "dead", now
	mustCreateDeliveries(t, s, due3m, due1m, due2m, dueNow, future, delivered, failed, leasedOther, expired)

	if got := claim(t, s, "w0", now, lease, 0); len(got) != 0 {
		t.Errorf("ClaimDeliveries(n=0) = %v, want none", recIDs(got))
	}

	// Oldest NextAttemptAt first, at most n.
	until := now.Add(lease)
	first := leased("w1", until, due3m, due2m)
	wantSame(t, "ClaimDeliveries(n=2)", first, claim(t, s, "w1", now, lease, 2))
	for _, d := range first {
		wantDelivery(t, s, d)
	}
	second := leased("w2", until, expired, due1m, dueNow)
	wantSame(t, "ClaimDeliveries(n=10)", second, claim(t, s, "w2", now, lease, 10))
	for _, d := range second {
		wantDelivery(t, s, d)
	}
	// The others are untouched.
	for _, d := range []storage.Delivery{future, delivered, failed, leasedOther} {
		wantDelivery(t, s, d)
	}
	wantSame(t, "ClaimDeliveries with everything due leased", nil, claim(t, s, "w3", now, lease, 10))

	// A millisecond later the future one is due.
	third := leased("w3", now.Add(time.Millisecond+lease), future)
	wantSame(t, "ClaimDeliveries a millisecond later", third, claim(t, s, "w3", now.Add(time.Millisecond), lease, 10))

	// Leases hold until LeaseUntil passes, then the deliveries are claimed again.
	wantSame(t, "ClaimDeliveries just before the leases end", nil, claim(t, s, "w4", until.Add(-time.Millisecond), lease, 10))
	again := leased("w4", until.Add(lease), due3m, due2m, expired, due1m, dueNow)
	wantSame(t, "ClaimDeliveries as the leases end", again, claim(t, s, "w4", until, lease, 10))
	// Between the two rounds of leases: the other node's lease and the future one's end.
	later := now.Add(45 * time.Second)
	wantSame(t, "ClaimDeliveries when the other node's lease ends", leased("w5", later.Add(lease), leasedOther, future),
		claim(t, s, "w5", later, lease, 10))
	wantDelivery(t, s, delivered)
	wantDelivery(t, s, failed)
}

// testDeliveryClaimOrphans: deliveries whose integration is gone (deleted after they were
// queued, or never there, or of another app) are never answered, and are removed.
func testDeliveryClaimOrphans(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	foreign := mustCreateIntegration(t, s, fullIntegration(other.ID, "foreign"))
	deleted := mustCreateIntegration(t, s, fullIntegration(app.ID, "deleted"))
	if err := s.DeleteIntegration(ctx, app.ID, deleted.ID); err != nil {
		t.Fatalf("DeleteIntegration: %v", err)
	}
	now := base
	var orphans []storage.Delivery
	for k, in := range []storage.Integration{
		deleted,
		{ID: "never", AppID: app.ID},
		{ID: foreign.ID, AppID: app.ID}, // another app's integration
	} {
		// Older than the live ones, so they come first in the order.
		orphans = append(orphans, fullDelivery(in, now.Add(-time.Hour-time.Duration(k)*time.Minute)))
	}
	if err := s.CreateDeliveries(ctx, orphans); err != nil {
		t.Fatalf("CreateDeliveries of deliveries without integration: %v", err)
	}
	live := mustCreateDeliveries(t, s, fullDelivery(i, now.Add(-2*time.Minute)), fullDelivery(i, now.Add(-time.Minute)),
		fullDelivery(foreign, now.Add(-30*time.Second)))

	got := claim(t, s, "w", now, time.Minute, 2)
	wantSame(t, "ClaimDeliveries(n=2) past orphans", leased("w", now.Add(time.Minute), live[:2]...), got)
	got = claim(t, s, "w", now, time.Minute, 10)
	wantSame(t, "ClaimDeliveries(n=10) past orphans", leased("w", now.Add(time.Minute), live[2]), got)
	for _, d := range orphans {
		wantNoDelivery(t, s, d.ID, "after ClaimDeliveries met it without its integration")
	}
}

// testDeliveryClaimConcurrent runs claimers at once, as the workers of several nodes do:
// every due delivery is answered to exactly one of them.
func testDeliveryClaimConcurrent(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	now := base
	const due = 30
	var ds []storage.Delivery
	for k := range due {
		ds = append(ds, fullDelivery(i, now.Add(-time.Duration(k%7)*time.Second)))
	}
	mustCreateDeliveries(t, s, ds...)
	notDue := mustCreateDeliveries(t, s, fullDelivery(i, now.Add(time.Second)))[0]

	const claimers = 4
	var (
		mu    sync.Mutex
		owner = map[string][]string{} // delivery → the claimers it was answered to
		total int
	)
	raceUpdates(t, claimers, func(c int) error {
		name := fmt.Sprintf("node-%d", c)
		for range 100 {
			got, err := s.ClaimDeliveries(t.Context(), name, now, time.Minute, 3)
			if err != nil {
				return err
			}
			mu.Lock()
			for _, d := range got {
				owner[d.ID] = append(owner[d.ID], name)
				if d.LeaseOwner != name {
					t.Errorf("%s was answered %s with lease owner %q", name, d.ID, d.LeaseOwner)
				}
			}
			total += len(got)
			done := total >= due
			mu.Unlock()
			if len(got) == 0 && done {
				return nil
			}
		}
		return fmt.Errorf("%s: the queue did not drain in 100 claims", name)
	})
	if total != due {
		t.Errorf("%d deliveries answered in all, want %d", total, due)
	}
	for _, d := range ds {
		switch got := owner[d.ID]; {
		case len(got) != 1:
			t.Errorf("delivery %s was answered to %v, want exactly one claimer", d.ID, got)
		default:
			stored, ok := readDelivery(t, s, d.ID)
			if !ok || stored.LeaseOwner != got[0] {
				t.Errorf("delivery %s is stored with lease owner %q, answered to %s", d.ID, stored.LeaseOwner, got[0])
			}
		}
	}
	wantDelivery(t, s, notDue)
}

func testDeliveryUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	d := mustCreateDeliveries(t, s, fullDelivery(i, base))[0]
	bystander := mustCreateDeliveries(t, s, fullDelivery(i, base))[0]

	// A worker's claim, then its finish checking the lease it holds.
	c := claim(t, s, "w1", base, time.Minute, 1)
	if len(c) != 1 || c[0].ID != d.ID {
		t.Fatalf("ClaimDeliveries = %v, want [%s]", recIDs(c), d.ID)
	}
	errLost := errors.New("lease lost")
	finish := func(owner string, until time.Time) (storage.Delivery, error) {
		return s.UpdateDelivery(ctx, d.ID, func(cur *storage.Delivery) error {
			if cur.LeaseOwner != owner || !cur.LeaseUntil.Equal(until) {
				return errLost
			}
			cur.State, cur.NextAttemptAt, cur.LastError = storage.DeliveryPending, base.Add(time.Hour), "HTTP 500"
			cur.Sent = []byte("sent by the last attempt \x00\xff")
			cur.Attempts++
			cur.LeaseOwner, cur.LeaseUntil = "", time.Time{}
			cur.UpdatedAt = base.Add(time.Second)
			return nil
		})
	}
	// The lease ended and another worker claimed the delivery: the first one's finish aborts.
	c2 := claim(t, s, "w2", c[0].LeaseUntil, time.Minute, 1)
	if len(c2) != 1 || c2[0].ID != d.ID {
		t.Fatalf("ClaimDeliveries after the lease = %v, want [%s]", recIDs(c2), d.ID)
	}
	if _, err := finish("w1", c[0].LeaseUntil); !errors.Is(err, errLost) {
		t.Fatalf("UpdateDelivery with a lost lease: error = %v, want fn's error", err)
	}
	wantDelivery(t, s, c2[0])
	got, err := finish("w2", c2[0].LeaseUntil)
	if err != nil {
		t.Fatalf("UpdateDelivery: %v", err)
	}
	want := d
	want.State, want.NextAttemptAt, want.LastError, want.Attempts = storage.DeliveryPending, base.Add(time.Hour), "HTTP 500", d.Attempts+1
	want.UpdatedAt = base.Add(time.Second)
	want.Sent = []byte("sent by the last attempt \x00\xff")
	if diffs := diff(want, got); diffs != "" {
		t.Errorf("UpdateDelivery result differs: %s", diffs)
	}
	wantDelivery(t, s, want)

	// fn cannot change what the delivery is: id, app, integration, event, payload and
	// creation time are kept.
	got, err = s.UpdateDelivery(ctx, d.ID, func(x *storage.Delivery) error {
		x.ID, x.AppID, x.IntegrationID, x.CreatedAt = "hijacked", "other-app", "other-integration", ms(time.Hour)
		x.EventID, x.Event, x.Payload = "other-event", "other.event", []byte("{}")
		x.State = storage.DeliveryDelivered
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateDelivery: %v", err)
	}
	want.State = storage.DeliveryDelivered
	if diffs := diff(want, got); diffs != "" {
		t.Errorf("UpdateDelivery changing identity: result differs: %s", diffs)
	}
	wantDelivery(t, s, want)

	// An aborting fn leaves the record as it was, even after changing it.
	errBoom := errors.New("boom")
	_, err = s.UpdateDelivery(ctx, d.ID, func(x *storage.Delivery) error {
		x.State, x.Attempts, x.LeaseOwner = storage.DeliveryFailed, 99, "thief"
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateDelivery with a failing fn: error = %v, want fn's error only", err)
	}
	wantDelivery(t, s, want)
	wantDelivery(t, s, bystander)

	_, err = s.UpdateDelivery(ctx, "missing", func(*storage.Delivery) error {
		t.Error("UpdateDelivery called fn for a missing delivery")
		return nil
	})
	wantNotFound(t, "UpdateDelivery(missing)", err)
}

// testDeliveryUpdateConcurrent runs read-modify-write updaters of one delivery at once:
// Attempts is a counter each one increments, so a lost update shows.
func testDeliveryUpdateConcurrent(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	d := fullDelivery(i, base)
	d.Attempts = 0
	mustCreateDeliveries(t, s, d)

	const workers = 20
	raceUpdates(t, workers, func(int) error {
		_, err := s.UpdateDelivery(t.Context(), d.ID, func(x *storage.Delivery) error {
			x.Attempts++
			return nil
		})
		return err
	})
	d.Attempts = workers
	wantDelivery(t, s, d)
}

func testDeliveryAttempts(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	sibling := mustCreateIntegration(t, s, fullIntegration(app.ID, "sibling"))
	foreign := mustCreateIntegration(t, s, fullIntegration(other.ID, "foreign"))
	ds := mustCreateDeliveries(t, s, fullDelivery(i, base), fullDelivery(i, base))

	var as []storage.DeliveryAttempt
	for k := range 7 {
		a := fullAttempt(ds[k%2], k/2+1, ms(time.Duration(k%5)*time.Minute)) // some CreatedAt ties
		if k == 6 {
			a = storage.DeliveryAttempt{ID: uniq("att-min-"), AppID: app.ID, IntegrationID: i.ID, DeliveryID: ds[0].ID}
		}
		as = append(as, a)
	}
	// Added out of order: the list sorts them.
	mustAddAttempts(t, s, as[3], as[0], as[6], as[5], as[1], as[4], as[2])
	siblings := mustAddAttempts(t, s, fullAttempt(storage.Delivery{ID: "d", AppID: app.ID, IntegrationID: sibling.ID}, 1, base))
	foreigns := mustAddAttempts(t, s, fullAttempt(storage.Delivery{ID: "d", AppID: other.ID, IntegrationID: foreign.ID}, 1, base))

	wantAttempts(t, s, app.ID, i.ID, as...)
	wantAttempts(t, s, app.ID, sibling.ID, siblings...)
	wantAttempts(t, s, other.ID, foreign.ID, foreigns...)
	wantAttempts(t, s, other.ID, i.ID) // the app is part of the key
	wantAttempts(t, s, app.ID, "no-such-integration")

	sorted := newestFirst(as, attemptCreated)
	for _, p := range []storage.Page{{Limit: 3}, {Limit: 3, Offset: 3}, {Limit: 3, Offset: 6}, {Limit: 3, Offset: 9}, {}} {
		got, total, err := s.ListDeliveryAttempts(ctx, app.ID, i.ID, p)
		if err != nil {
			t.Fatalf("ListDeliveryAttempts(%+v): %v", p, err)
		}
		if total != len(as) {
			t.Errorf("ListDeliveryAttempts(%+v) total = %d, want %d", p, total, len(as))
		}
		np := p.Normalize()
		wantSame(t, fmt.Sprintf("ListDeliveryAttempts(%+v)", p), window(sorted, np.Offset, np.Limit), got)
	}

	dup := fullAttempt(ds[0], 9, base)
	dup.ID = as[0].ID
	wantConflict(t, "AddDeliveryAttempt with a taken id", s.AddDeliveryAttempt(ctx, dup))
	wantAttempts(t, s, app.ID, i.ID, as...)
}

func testDeliveryPurge(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	before := base

	mk := func(state string, updated time.Time) storage.Delivery {
		d := fullDelivery(i, before.Add(-48*time.Hour))
		d.State, d.UpdatedAt = state, updated
		return d
	}
	gone := mustCreateDeliveries(t, s,
		mk(storage.DeliveryDelivered, before.Add(-time.Millisecond)),
		mk(storage.DeliveryFailed, before.Add(-30*24*time.Hour)),
		mk(storage.DeliveryDelivered, time.Time{}), // never stamped: older than any cut-off
	)
	kept := mustCreateDeliveries(t, s,
		mk(storage.DeliveryDelivered, before), // not before the cut-off
		mk(storage.DeliveryFailed, before.Add(time.Hour)),
		mk(storage.DeliveryPending, before.Add(-30*24*time.Hour)), // not finished
	)
	leasedOld := mk(storage.DeliveryPending, before.Add(-30*24*time.Hour))
	leasedOld.LeaseOwner, leasedOld.LeaseUntil = "w", before.Add(-29*24*time.Hour)
	kept = append(kept, mustCreateDeliveries(t, s, leasedOld)...)

	d := kept[0]
	mustAddAttempts(t, s, fullAttempt(d, 1, before.Add(-time.Millisecond)), fullAttempt(d, 2, before.Add(-40*24*time.Hour)),
		storage.DeliveryAttempt{ID: uniq("att-min-"), AppID: app.ID, IntegrationID: i.ID}) // never stamped
	keptAttempts := mustAddAttempts(t, s, fullAttempt(d, 3, before), fullAttempt(d, 4, before.Add(time.Minute)))

	n, err := s.PurgeDeliveries(ctx, before)
	if err != nil {
		t.Fatalf("PurgeDeliveries: %v", err)
	}
	if n != len(gone) {
		t.Errorf("PurgeDeliveries = %d, want %d", n, len(gone))
	}
	for _, d := range gone {
		wantNoDelivery(t, s, d.ID, "after PurgeDeliveries")
	}
	for _, d := range kept {
		wantDelivery(t, s, d)
	}
	wantAttempts(t, s, app.ID, i.ID, keptAttempts...)
	wantIntegration(t, s, i)

	if n, err := s.PurgeDeliveries(ctx, before); err != nil || n != 0 {
		t.Errorf("second PurgeDeliveries = (%d, %v), want 0", n, err)
	}
	for _, d := range kept {
		wantDelivery(t, s, d)
	}
}
