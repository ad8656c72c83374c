package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// TestMigrationCopiesPortalSwitches opens a database made before migration 34, when the
// buyer portal's settings lived on a store connection of kind portal: after the upgrade
// each app with one has the connection's switches and on/off state as its own, an app
// without one has its portal off, and the connections are still readable.
func TestMigrationCopiesPortalSwitches(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")
	s := openBeforeMigration(t, path, 34)
	for i, id := range []string{"on", "off", "none"} {
		if _, err := s.w.ExecContext(ctx, `INSERT INTO apps (id, account_id, name, name_lower, description, version,
	enabled, paused, anti_debug, anti_vm, lock_hwid, lock_ip, lock_pc_name, secret_hash, secret_last6, created_at, updated_at)
VALUES (?, 'acc', ?, ?, '', '1.0', 1, 0, 0, 0, 0, 0, 0, ?, '123456', 1, 2)`, id, id, id, "hash-"+id); err != nil {
			t.Fatalf("insert app %d: %v", i, err)
		}
	}
	at := time.UnixMilli(1_700_000_000_000).UTC()
	conns := []storage.StoreConnection{
		{ID: "c-on", AppID: "on", Provider: "portal", Name: "Buyers", ReceiverID: "r-on", Enabled: true,
			Portal: storage.PortalSwitches{HWIDReset: true, Downloads: true}, CreatedAt: at, UpdatedAt: at},
		// A second portal connection of the same app, newer: the oldest wins.
		{ID: "c-on-2", AppID: "on", Provider: "portal", Name: "Later", ReceiverID: "r-on-2", Enabled: false,
			Portal: storage.PortalSwitches{Resend: true}, CreatedAt: at.Add(time.Hour), UpdatedAt: at},
		{ID: "c-off", AppID: "off", Provider: "portal", Name: "Buyers", ReceiverID: "r-off", Enabled: false,
			Portal: storage.PortalSwitches{SeatRelease: true, Resend: true}, CreatedAt: at, UpdatedAt: at},
		{ID: "c-stripe", AppID: "none", Provider: "stripe", Name: "stripe", ReceiverID: "r-stripe", Secret: "whsec_x", Enabled: true,
			CreatedAt: at, UpdatedAt: at},
	}
	for _, c := range conns {
		if err := s.CreateStoreConnection(ctx, c); err != nil {
			t.Fatalf("CreateStoreConnection(%s): %v", c.ID, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open after the upgrade: %v", err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	for id, want := range map[string]storage.AppPortal{
		"on":   {Enabled: true, PortalSwitches: storage.PortalSwitches{HWIDReset: true, Downloads: true}},
		"off":  {PortalSwitches: storage.PortalSwitches{SeatRelease: true, Resend: true}},
		"none": {},
	} {
		a, err := s2.GetApp(ctx, "acc", id)
		if err != nil {
			t.Fatalf("GetApp(%s): %v", id, err)
		}
		if a.Portal != want {
			t.Errorf("app %s's portal after the upgrade = %+v, want %+v", id, a.Portal, want)
		}
	}
	// The connections stay readable for one release.
	if c, err := s2.GetStoreConnection(ctx, "on", "c-on"); err != nil || c.Provider != "portal" || !c.Portal.HWIDReset {
		t.Errorf("portal connection after the upgrade = (%+v, %v)", c, err)
	}
	// The settings are the app's now: changing them leaves the connection as it was.
	if _, err := s2.UpdateApp(ctx, "acc", "on", func(a *storage.App) error { a.Portal.Enabled = false; return nil }); err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	if a, err := s2.GetAppByID(ctx, "on"); err != nil || a.Portal.Enabled || !a.Portal.HWIDReset {
		t.Errorf("app after turning its portal off = (%+v, %v)", a.Portal, err)
	}
}
