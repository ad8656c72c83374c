package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// The delivery queue holds pending deliveries only; finished ones live in the history
// (storage.DeliveryStore). Which of the two holds a delivery shows through the archive's
// kinds, KindDeliveries and KindDeliveryHistory.
var deliveryHistoryTests = []subtest{
	{"DeliveryFinishedLeavesTheQueue", testDeliveryFinishedLeavesTheQueue},
	{"DeliveryIDsUniqueAcrossQueueAndHistory", testDeliveryIDsUniqueAcrossQueueAndHistory},
	{"DeliveryHistorySweptWithItsIntegration", testDeliveryHistorySweptWithItsIntegration},
	{"DeliveryMoveFinishedFindsNone", testDeliveryMoveFinishedFindsNone},
	{"DeliveryUpdateConcurrentAcrossMoves", testDeliveryUpdateConcurrentAcrossMoves},
	{"DeliveryHistoryBoundedPerIntegration", testDeliveryHistoryBoundedPerIntegration},
	{"DeliveryTrimRacesRedeliveries", testDeliveryTrimRacesRedeliveries},
	{"DeliveryAttemptsBoundedPerIntegration", testDeliveryAttemptsBoundedPerIntegration},
}

// kindIDs answers the ids of the deliveries the archive reads from kind (the queue or
// the history).
func kindIDs(t *testing.T, s storage.Store, kind string) []string {
	t.Helper()
	as, ok := s.(storage.ArchiveStore)
	if !ok {
		t.Fatalf("store %T is no ArchiveStore", s)
	}
	var ids []string
	if err := as.ArchiveRecords(t.Context(), kind, func(r any) error {
		ids = append(ids, r.(storage.Delivery).ID)
		return nil
	}); err != nil {
		t.Fatalf("ArchiveRecords(%s): %v", kind, err)
	}
	return ids
}

// wantHeldIn fails unless the delivery id is in the queue (history false) or in the
// history (history true), and not in the other.
func wantHeldIn(t *testing.T, s storage.Store, id string, history bool, why string) {
	t.Helper()
	inQueue := slices.Contains(kindIDs(t, s, storage.KindDeliveries), id)
	inHistory := slices.Contains(kindIDs(t, s, storage.KindDeliveryHistory), id)
	if inQueue == history || inHistory != history {
		t.Errorf("%s: delivery %s in the queue %v, in the history %v; want only in the %s", why, id, inQueue, inHistory,
			map[bool]string{false: "queue", true: "history"}[history])
	}
}

// testDeliveryFinishedLeavesTheQueue: created pending, a delivery is queued; its finish
// moves it to the history, where it reads back the same, is never claimed and is purged;
// a redelivery (back to pending) queues it again, claimable; a finished one created as
// such (a restore) goes straight to the history.
func testDeliveryFinishedLeavesTheQueue(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	d := mustCreateDeliveries(t, s, fullDelivery(i, base))[0]
	wantHeldIn(t, s, d.ID, false, "created pending")

	c := claim(t, s, "w1", base, time.Minute, 10)
	if len(c) != 1 || c[0].ID != d.ID {
		t.Fatalf("ClaimDeliveries = %v, want [%s]", recIDs(c), d.ID)
	}
	done, err := s.UpdateDelivery(ctx, d.ID, func(cur *storage.Delivery) error {
		if cur.LeaseOwner != "w1" {
			t.Errorf("UpdateDelivery read lease owner %q, want w1", cur.LeaseOwner)
		}
		cur.State, cur.NextAttemptAt, cur.LastError = storage.DeliveryDelivered, time.Time{}, ""
		cur.Attempts++
		cur.LeaseOwner, cur.LeaseUntil = "", time.Time{}
		cur.Sent = []byte("the request as sent")
		cur.UpdatedAt = base.Add(time.Second)
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateDelivery (finish): %v", err)
	}
	wantHeldIn(t, s, d.ID, true, "finished")
	wantDelivery(t, s, done)
	wantSame(t, "ClaimDeliveries with the delivery finished", nil, claim(t, s, "w2", base.Add(time.Hour), time.Minute, 10))

	// Updated in the history (an update that keeps it finished).
	failed, err := s.UpdateDelivery(ctx, d.ID, func(cur *storage.Delivery) error {
		cur.State, cur.LastError = storage.DeliveryFailed, "marked failed"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateDelivery in the history: %v", err)
	}
	wantHeldIn(t, s, d.ID, true, "updated in the history")
	wantDelivery(t, s, failed)

	// Redelivered: pending and due again, back in the queue, claimed once.
	again, err := s.UpdateDelivery(ctx, d.ID, func(cur *storage.Delivery) error {
		cur.State, cur.NextAttemptAt, cur.UpdatedAt = storage.DeliveryPending, base.Add(2*time.Hour), base.Add(2*time.Hour)
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateDelivery (redeliver): %v", err)
	}
	wantHeldIn(t, s, d.ID, false, "redelivered")
	wantDelivery(t, s, again)
	wantSame(t, "ClaimDeliveries after the redelivery", leased("w3", base.Add(2*time.Hour+time.Minute), again),
		claim(t, s, "w3", base.Add(2*time.Hour), time.Minute, 10))

	// A finished delivery created as such (a restored archive) goes to the history, and
	// the purge takes history records by their last update.
	old := fullDelivery(i, base)
	old.State, old.UpdatedAt = storage.DeliveryFailed, base.Add(-48*time.Hour)
	mustCreateDeliveries(t, s, old)
	wantHeldIn(t, s, old.ID, true, "created finished")
	wantDelivery(t, s, old)
	if n, err := s.PurgeDeliveries(ctx, base.Add(-24*time.Hour)); err != nil || n != 1 {
		t.Errorf("PurgeDeliveries = (%d, %v), want (1, nil)", n, err)
	}
	wantNoDelivery(t, s, old.ID, "after PurgeDeliveries")
	wantHeldIn(t, s, d.ID, false, "a queued delivery after PurgeDeliveries")
}

// testDeliveryIDsUniqueAcrossQueueAndHistory: a dispatcher that queues an event's
// delivery again after a crash must meet ErrConflict even when the first one already
// finished (it is in the history), and a refused batch leaves nothing.
func testDeliveryIDsUniqueAcrossQueueAndHistory(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	done := fullDelivery(i, base)
	done.State = storage.DeliveryDelivered
	queued := fullDelivery(i, base)
	mustCreateDeliveries(t, s, done, queued)

	again := done
	again.State = storage.DeliveryPending
	fresh := fullDelivery(i, base)
	wantConflict(t, "CreateDeliveries of a pending delivery whose id is in the history",
		s.CreateDeliveries(ctx, []storage.Delivery{fresh, again}))
	wantNoDelivery(t, s, fresh.ID, "after a refused CreateDeliveries")
	wantDelivery(t, s, done)

	finishedTwin := queued
	finishedTwin.State = storage.DeliveryFailed
	fresh2 := fullDelivery(i, base)
	fresh2.State = storage.DeliveryDelivered
	wantConflict(t, "CreateDeliveries of a finished delivery whose id is queued",
		s.CreateDeliveries(ctx, []storage.Delivery{fresh2, finishedTwin}))
	wantNoDelivery(t, s, fresh2.ID, "after a refused CreateDeliveries")
	wantDelivery(t, s, queued)
	wantHeldIn(t, s, queued.ID, false, "after a refused twin")
	wantHeldIn(t, s, done.ID, true, "after a refused twin")
}

// testDeliveryHistorySweptWithItsIntegration: deleting an integration or an app takes its
// finished deliveries too.
func testDeliveryHistorySweptWithItsIntegration(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	doomed := mustCreateIntegration(t, s, fullIntegration(app.ID, "doomed"))
	kept := mustCreateIntegration(t, s, fullIntegration(app.ID, "kept"))
	mk := func(i storage.Integration) storage.Delivery {
		d := fullDelivery(i, base)
		d.State = storage.DeliveryDelivered
		return d
	}
	gone, stays := mk(doomed), mk(kept)
	mustCreateDeliveries(t, s, gone, stays)
	if err := s.DeleteIntegration(ctx, app.ID, doomed.ID); err != nil {
		t.Fatalf("DeleteIntegration: %v", err)
	}
	wantNoDelivery(t, s, gone.ID, "after DeleteIntegration")
	wantDelivery(t, s, stays)

	if err := s.DeleteApp(ctx, "acc-1", app.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	wantNoDelivery(t, s, stays.ID, "after DeleteApp")
}

// testDeliveryMoveFinishedFindsNone: through the contract no finished delivery is ever
// left in the queue, so the upgrade's move finds none and touches nothing (the engines'
// own tests plant older versions' records and see them moved).
func testDeliveryMoveFinishedFindsNone(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	done := fullDelivery(i, base)
	done.State = storage.DeliveryFailed
	ds := mustCreateDeliveries(t, s, fullDelivery(i, base), done)
	if n, err := s.MoveFinishedDeliveries(t.Context(), 10); err != nil || n != 0 {
		t.Errorf("MoveFinishedDeliveries = (%d, %v), want (0, nil)", n, err)
	}
	for _, d := range ds {
		wantDelivery(t, s, d)
	}
}

// testDeliveryUpdateConcurrentAcrossMoves runs updaters of one delivery at once, each
// counting an attempt and flipping it between finished and pending, so that every update
// moves it between the queue and the history: no update is lost, and it ends in one
// place, read back as written.
func testDeliveryUpdateConcurrentAcrossMoves(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	d := fullDelivery(i, base)
	d.Attempts = 0
	mustCreateDeliveries(t, s, d)

	const workers = 12
	raceUpdates(t, workers, func(int) error {
		_, err := s.UpdateDelivery(t.Context(), d.ID, func(x *storage.Delivery) error {
			x.Attempts++
			x.State = storage.DeliveryPending
			if x.Attempts%2 == 1 {
				x.State = storage.DeliveryDelivered
			}
			return nil
		})
		return err
	})
	d.Attempts = workers // even: pending, in the queue
	wantDelivery(t, s, d)
	wantHeldIn(t, s, d.ID, false, "after the racing updates")
}

// testDeliveryHistoryBoundedPerIntegration: the count bound keeps each integration's
// newest finished deliveries by last update (then id), removes the others, the newest of
// them first, in batches of at most n, counts and touches only that integration's history, and never
// a pending delivery however old.
func testDeliveryHistoryBoundedPerIntegration(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	busy := mustCreateIntegration(t, s, fullIntegration(app.ID, "busy"))
	quiet := mustCreateIntegration(t, s, fullIntegration(app.ID, "quiet"))
	finished := func(i storage.Integration, updated time.Time) storage.Delivery {
		d := fullDelivery(i, time.Time{})
		d.State, d.UpdatedAt = storage.DeliveryDelivered, updated
		return d
	}
	// busy's history, oldest first: 9 deliveries; the 5th and 6th share their last
	// update, so the id decides which is newer (the 6th, created later, has the greater).
	var hist []storage.Delivery
	for k := range 9 {
		at := ms(-time.Duration(20-k) * time.Minute)
		if k == 5 {
			at = hist[4].UpdatedAt
		}
		hist = append(hist, finished(busy, at))
	}
	hist[1].State = storage.DeliveryFailed
	mustCreateDeliveries(t, s, hist...)
	// Pending ones, older than any finished: the queue is not the history.
	var pending []storage.Delivery
	for k := range 3 {
		d := fullDelivery(busy, ms(time.Hour))
		d.UpdatedAt = ms(-time.Duration(48+k) * time.Hour)
		pending = append(pending, d)
	}
	mustCreateDeliveries(t, s, pending...)
	quietHist := mustCreateDeliveries(t, s, finished(quiet, ms(-3*time.Hour)), finished(quiet, ms(-2*time.Hour)))
	quietPending := mustCreateDeliveries(t, s, fullDelivery(quiet, ms(time.Hour)))[0]

	over := func(moreThan int) []storage.IntegrationRef {
		t.Helper()
		refs, err := s.IntegrationsOverHistory(ctx, moreThan)
		if err != nil {
			t.Fatalf("IntegrationsOverHistory(%d): %v", moreThan, err)
		}
		return refs
	}
	busyRef := storage.IntegrationRef{AppID: app.ID, IntegrationID: busy.ID}
	quietRef := storage.IntegrationRef{AppID: app.ID, IntegrationID: quiet.ID}
	wantRefs := func(what string, want, got []storage.IntegrationRef) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	wantRefs("IntegrationsOverHistory(4)", []storage.IntegrationRef{busyRef}, over(4))
	wantRefs("IntegrationsOverHistory(1)", []storage.IntegrationRef{busyRef, quietRef}, over(1))
	wantRefs("IntegrationsOverHistory(9)", nil, over(9))

	// keep 4 of 9, in batches of 2: 2, 2, 1, then none; the newest beyond the 4 go first.
	const keep, batch = 4, 2
	for round, want := range []int{2, 2, 1, 0} {
		n, err := s.TrimDeliveries(ctx, app.ID, busy.ID, keep, batch)
		if err != nil || n != want {
			t.Fatalf("TrimDeliveries round %d = (%d, %v), want (%d, nil)", round, n, err, want)
		}
		if round == 0 {
			// hist[5] shares hist[4]'s last update and has the greater id: it is kept.
			wantNoDelivery(t, s, hist[4].ID, "the newest beyond the bound, after the first batch")
			wantNoDelivery(t, s, hist[3].ID, "the second newest beyond the bound, after the first batch")
			wantDelivery(t, s, hist[2]) // it waits for the next batch
		}
	}
	for k, d := range hist {
		if k < len(hist)-keep {
			wantNoDelivery(t, s, d.ID, "beyond the newest 4")
		} else {
			wantDelivery(t, s, d)
			wantHeldIn(t, s, d.ID, true, "one of the newest 4")
		}
	}
	for _, d := range append(pending, quietPending) {
		wantDelivery(t, s, d)
		wantHeldIn(t, s, d.ID, false, "a pending delivery after TrimDeliveries")
	}
	for _, d := range quietHist {
		wantDelivery(t, s, d) // another integration's history is not counted nor trimmed
	}
	wantRefs("IntegrationsOverHistory(4) after the trim", nil, over(4))

	// keep 0 empties the history of the integration, its queue stays.
	if n, err := s.TrimDeliveries(ctx, app.ID, quiet.ID, 0, 10); err != nil || n != 2 {
		t.Fatalf("TrimDeliveries(keep 0) = (%d, %v), want (2, nil)", n, err)
	}
	for _, d := range quietHist {
		wantNoDelivery(t, s, d.ID, "after TrimDeliveries with keep 0")
	}
	wantDelivery(t, s, quietPending)
	if n, err := s.TrimDeliveries(ctx, app.ID, "no-such-integration", 0, 10); err != nil || n != 0 {
		t.Errorf("TrimDeliveries of an unknown integration = (%d, %v), want (0, nil)", n, err)
	}
}

// testDeliveryTrimRacesRedeliveries runs the count bound's trim while deliveries it may
// have picked are redelivered and finished again, which makes them the integration's
// newest: a delivery whose redelivery went through is never lost to a trim that picked
// its older copy (on MongoDB the trim's delete by _id must not take the copy the new
// finish wrote), and once the trim is done the history holds exactly the newest keep.
func testDeliveryTrimRacesRedeliveries(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	i := mustCreateIntegration(t, s, fullIntegration(app.ID, "hook"))
	const total, keep, batch = 30, 10, 3
	var hist, targets []storage.Delivery
	for k := range total {
		d := fullDelivery(i, time.Time{})
		d.State, d.UpdatedAt = storage.DeliveryDelivered, ms(-time.Duration(total-k)*time.Minute)
		hist = append(hist, d)
		if k%3 == 0 { // spread over the order the trim takes them in
			targets = append(targets, d)
		}
	}
	mustCreateDeliveries(t, s, hist...)

	trimmed := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				trimmed <- nil
				return
			default:
			}
			if _, err := s.TrimDeliveries(ctx, app.ID, i.ID, keep, batch); err != nil {
				trimmed <- err
				return
			}
		}
	}()
	var mu sync.Mutex
	redone := map[string]time.Time{} // the deliveries finished again, and when
	raceUpdates(t, len(targets), func(w int) error {
		id := targets[w].ID
		_, err := s.UpdateDelivery(ctx, id, func(cur *storage.Delivery) error {
			cur.State, cur.NextAttemptAt, cur.UpdatedAt = storage.DeliveryPending, base, base
			return nil
		})
		if errors.Is(err, storage.ErrNotFound) {
			return nil // trimmed before its redelivery
		}
		if err != nil {
			return fmt.Errorf("redeliver %s: %w", id, err)
		}
		at := ms(time.Hour + time.Duration(w)*time.Second)
		if _, err := s.UpdateDelivery(ctx, id, func(cur *storage.Delivery) error {
			cur.State, cur.NextAttemptAt, cur.UpdatedAt = storage.DeliveryDelivered, time.Time{}, at
			return nil
		}); err != nil {
			return fmt.Errorf("finish %s again: %w", id, err)
		}
		mu.Lock()
		redone[id] = at
		mu.Unlock()
		return nil
	})
	close(stop)
	if err := <-trimmed; err != nil {
		t.Fatalf("TrimDeliveries during the redeliveries: %v", err)
	}
	for {
		n, err := s.TrimDeliveries(ctx, app.ID, i.ID, keep, batch)
		if err != nil {
			t.Fatalf("TrimDeliveries after the redeliveries: %v", err)
		}
		if n < batch {
			break
		}
	}
	for id, at := range redone {
		got, ok := readDelivery(t, s, id)
		if !ok {
			t.Errorf("delivery %s, finished again as one of the newest, was trimmed", id)
			continue
		}
		if got.State != storage.DeliveryDelivered || !got.UpdatedAt.Equal(at) {
			t.Errorf("delivery %s reads %s updated %v, want delivered updated %v", id, got.State, got.UpdatedAt, at)
		}
	}
	if got := kindIDs(t, s, storage.KindDeliveryHistory); len(got) != keep {
		t.Errorf("history after the trim holds %d deliveries, want %d: %v", len(got), keep, got)
	}
	t.Logf("%d of %d redeliveries went through before the trim took their delivery", len(redone), len(targets))
}

// testDeliveryAttemptsBoundedPerIntegration: the count bound keeps each integration's
// newest attempts (by CreatedAt, then id) and removes the others, the newest of them
// first, in batches of at most n, counting and touching only that integration's.
func testDeliveryAttemptsBoundedPerIntegration(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	busy := mustCreateIntegration(t, s, fullIntegration(app.ID, "busy"))
	quiet := mustCreateIntegration(t, s, fullIntegration(app.ID, "quiet"))
	d := mustCreateDeliveries(t, s, fullDelivery(busy, base))[0]
	q := mustCreateDeliveries(t, s, fullDelivery(quiet, base))[0]
	// busy's attempts, oldest first; the 4th and 5th share their time, the id decides.
	var as []storage.DeliveryAttempt
	for k := range 7 {
		a := fullAttempt(d, k+1, ms(-time.Duration(10-k)*time.Minute))
		a.ID = fmt.Sprintf("att-trim-%02d", k)
		if k == 4 {
			a.CreatedAt = as[3].CreatedAt
		}
		as = append(as, a)
	}
	mustAddAttempts(t, s, as...)
	quietAs := mustAddAttempts(t, s, fullAttempt(q, 1, ms(-time.Hour)), fullAttempt(q, 2, ms(-30*time.Minute)))

	over, err := s.IntegrationsOverAttempts(ctx, 3)
	if want := []storage.IntegrationRef{{AppID: app.ID, IntegrationID: busy.ID}}; err != nil || !slices.Equal(over, want) {
		t.Fatalf("IntegrationsOverAttempts(3) = (%v, %v), want %v", over, err, want)
	}
	// keep 3 of 7 in batches of 3: 3, 1.
	const keep = 3
	for round, want := range []int{3, 1, 0} {
		if n, err := s.TrimDeliveryAttempts(ctx, app.ID, busy.ID, keep, 3); err != nil || n != want {
			t.Fatalf("TrimDeliveryAttempts round %d = (%d, %v), want (%d, nil)", round, n, err, want)
		}
	}
	list := func(i storage.Integration) []storage.DeliveryAttempt {
		t.Helper()
		got, total, err := s.ListDeliveryAttempts(ctx, app.ID, i.ID, storage.Page{})
		if err != nil || total != len(got) {
			t.Fatalf("ListDeliveryAttempts: %d of %d, %v", len(got), total, err)
		}
		return got
	}
	newest := slices.Clone(as[len(as)-keep:])
	slices.Reverse(newest)
	wantSame(t, "the busy integration's attempts after the trim", newest, list(busy))
	quietNewest := slices.Clone(quietAs)
	slices.Reverse(quietNewest)
	wantSame(t, "the quiet integration's attempts", quietNewest, list(quiet))
	if over, err := s.IntegrationsOverAttempts(ctx, 3); err != nil || len(over) != 0 {
		t.Errorf("IntegrationsOverAttempts(3) after the trim = (%v, %v), want none", over, err)
	}
}
