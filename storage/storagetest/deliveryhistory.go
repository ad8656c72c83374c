package storagetest

import (
	"slices"
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
