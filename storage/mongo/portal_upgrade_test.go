package mongo

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// TestOpenCopiesPortalSwitches: app documents written before the buyer portal's settings
// moved to the app have no portal field; the next Open copies each app's portal
// connection (the oldest) to it, leaves an app without one off, and never overwrites
// settings an app has (a second Open after a change keeps the change).
func TestOpenCopiesPortalSwitches(t *testing.T) {
	uri := testenv.MongoURI(t)
	s := openFresh(t, uri)
	ctx := t.Context()
	for _, id := range []string{"on", "off", "none"} {
		if err := s.CreateApp(ctx, storage.App{ID: id, AccountID: "acc", Name: id, Enabled: true}); err != nil {
			t.Fatalf("CreateApp(%s): %v", id, err)
		}
	}
	// As the previous release wrote them: no portal field.
	if _, err := s.apps.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$unset", Value: bson.D{{Key: "portal", Value: ""}}}}); err != nil {
		t.Fatalf("unset portal: %v", err)
	}
	at := time.UnixMilli(1_700_000_000_000).UTC()
	for _, c := range []storage.StoreConnection{
		{ID: "c-on", AppID: "on", Provider: "portal", Name: "Buyers", ReceiverID: "r-on", Enabled: true,
			Portal: storage.PortalSwitches{HWIDReset: true, Downloads: true}, CreatedAt: at, UpdatedAt: at},
		{ID: "c-on-2", AppID: "on", Provider: "portal", Name: "Later", ReceiverID: "r-on-2",
			Portal: storage.PortalSwitches{Resend: true}, CreatedAt: at.Add(time.Hour), UpdatedAt: at},
		{ID: "c-off", AppID: "off", Provider: "portal", Name: "Buyers", ReceiverID: "r-off",
			Portal: storage.PortalSwitches{SeatRelease: true, Resend: true}, CreatedAt: at, UpdatedAt: at},
		{ID: "c-stripe", AppID: "none", Provider: "stripe", Name: "stripe", ReceiverID: "r-stripe", Secret: "whsec_x", Enabled: true,
			CreatedAt: at, UpdatedAt: at},
	} {
		if err := s.CreateStoreConnection(ctx, c); err != nil {
			t.Fatalf("CreateStoreConnection(%s): %v", c.ID, err)
		}
	}
	reopen := func() *Store {
		s2, err := Open(ctx, Config{URI: uri, Database: s.db.Name(), Sealer: storagetest.TestSealer(t)})
		if err != nil {
			t.Fatalf("Open after the upgrade: %v", err)
		}
		t.Cleanup(func() { _ = s2.Close() })
		return s2
	}
	s2 := reopen()
	for id, want := range map[string]storage.AppPortal{
		"on":   {Enabled: true, PortalSwitches: storage.PortalSwitches{HWIDReset: true, Downloads: true}},
		"off":  {PortalSwitches: storage.PortalSwitches{SeatRelease: true, Resend: true}},
		"none": {},
	} {
		if a, err := s2.GetApp(ctx, "acc", id); err != nil || a.Portal != want {
			t.Errorf("app %s's portal after the upgrade = (%+v, %v), want %+v", id, a.Portal, err, want)
		}
	}
	if _, err := s2.UpdateApp(ctx, "acc", "on", func(a *storage.App) error { a.Portal.Enabled = false; return nil }); err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	s3 := reopen()
	if a, err := s3.GetAppByID(ctx, "on"); err != nil || a.Portal.Enabled || !a.Portal.HWIDReset {
		t.Errorf("a change after the copy was overwritten by the next Open: (%+v, %v)", a.Portal, err)
	}
	if c, err := s3.GetStoreConnection(ctx, "on", "c-on"); err != nil || c.Provider != "portal" {
		t.Errorf("portal connection after the upgrade = (%+v, %v)", c, err)
	}
}
