package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestBulkUsers (issue 22): one request acts on many users; each row answers its own
// outcome; one audit entry holds every changed user's before and after; bad input is
// refused whole and changes nothing.
func TestBulkUsers(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro")
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Bulk")
		base := "/api/apps/" + appID + "/users"
		var ids []string
		for _, name := range []string{"ann", "bob", "cid"} {
			r := a.do("POST", base, map[string]any{"username": name, "password": "pw-123456"})
			expectOK(t, r, http.StatusCreated)
			ids = append(ids, r.Data()["id"].(string))
		}
		past := s.Clock().Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		expectOK(t, a.do("PATCH", base+"/"+ids[2], map[string]any{"expiresAt": past}), http.StatusOK)

		for _, bad := range []map[string]any{
			{"action": "explode", "ids": ids},
			{"action": "ban"},
			{"action": "ban", "ids": ids, "filter": "expired"},
			{"action": "ban", "filter": "banned"},
			{"action": "extend", "ids": ids},
			{"action": "ban", "ids": make([]string, 1001)},
		} {
			expect(t, a.do("POST", base+"/bulk", bad), http.StatusBadRequest, "VALIDATION_ERROR")
		}
		if n := a.do("GET", base+"?banned=true", nil).Data()["total"]; n != float64(0) {
			t.Fatalf("a refused bulk request banned %v users", n)
		}

		r := a.do("POST", base+"/bulk", map[string]any{"action": "ban", "banReason": "chargeback", "ids": []string{ids[0], ids[1], "no-such-user", ids[0]}})
		expectOK(t, r, http.StatusOK)
		d := r.Data()
		if d["succeeded"] != float64(2) || d["failed"] != float64(1) || len(d["results"].([]any)) != 3 {
			t.Fatalf("bulk ban: %s", r.Raw)
		}
		miss := d["results"].([]any)[2].(map[string]any)
		if miss["id"] != "no-such-user" || miss["ok"] != false || miss["error"].(map[string]any)["code"] != "NOT_FOUND" {
			t.Fatalf("the unknown user's row: %v", miss)
		}
		u := a.do("GET", base+"/"+ids[1], nil).Data()
		if u["banned"] != true || u["banReason"] != "chargeback" {
			t.Fatalf("bob after the bulk ban: %v", u)
		}
		entry := auditEntries(t, s, o.Token, "/api/audit?recordType=users&limit=1", 1)[0]
		before, after := entry["before"].(map[string]any), entry["after"].(map[string]any)
		if len(before) != 2 || before[ids[0]].(map[string]any)["banned"] != false || after[ids[1]].(map[string]any)["banned"] != true ||
			entry["route"] != "/api/apps/:appId/users/bulk" {
			t.Fatalf("bulk audit entry: %v", entry)
		}

		r = a.do("POST", base+"/bulk", map[string]any{"action": "extend", "duration": 86400, "ids": ids[:1]})
		expectOK(t, r, http.StatusOK)
		if r.Data()["succeeded"] != float64(1) {
			t.Fatalf("extend: %s", r.Raw)
		}
		expectOK(t, a.do("POST", base+"/bulk", map[string]any{"action": "unban", "ids": ids[:2]}), http.StatusOK)
		if n := a.do("GET", base+"?banned=true", nil).Data()["total"]; n != float64(0) {
			t.Fatalf("%v users banned after the bulk unban", n)
		}
		expectOK(t, a.do("POST", base+"/bulk", map[string]any{"action": "reset-hwid", "ids": ids[:2]}), http.StatusOK)

		// "delete expired": only cid has expired.
		r = a.do("POST", base+"/bulk", map[string]any{"action": "delete", "filter": "expired"})
		expectOK(t, r, http.StatusOK)
		if r.Data()["succeeded"] != float64(1) || r.Data()["results"].([]any)[0].(map[string]any)["id"] != ids[2] {
			t.Fatalf("delete expired: %s", r.Raw)
		}
		if n := a.do("GET", base, nil).Data()["total"]; n != float64(2) {
			t.Fatalf("%v users left, want 2", n)
		}
		entry = auditEntries(t, s, o.Token, "/api/audit?recordType=users&limit=1", 1)[0]
		if entry["after"].(map[string]any)[ids[2]].(map[string]any)["deleted"] != true {
			t.Fatalf("bulk delete entry: %v", entry)
		}

		// A stranger acts on nothing of this app.
		stranger := api{t, s, newOwner(t, s).Token}
		expect(t, stranger.do("POST", base+"/bulk", map[string]any{"action": "delete", "ids": ids}), http.StatusNotFound, "NOT_FOUND")
	})
}

// TestLicensesAddTime: add-time lengthens every unused key with a duration, and only those.
func TestLicensesAddTime(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, secret := a.createApp("AddTime")
		base := "/api/apps/" + appID + "/licenses"
		r := a.do("POST", base, map[string]any{"count": 3, "duration": 3600})
		expectOK(t, r, http.StatusCreated)
		keys := r.Data()["licenses"].([]any)
		expectOK(t, a.do("POST", base, map[string]any{"count": 1}), http.StatusCreated) // no duration: skipped
		used := keys[0].(map[string]any)
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("license", map[string]any{"licenseKey": used["key"]}), http.StatusOK)

		expect(t, a.do("POST", base+"/add-time", map[string]any{"seconds": 0}), http.StatusBadRequest, "VALIDATION_ERROR")
		r = a.do("POST", base+"/add-time", map[string]any{"seconds": 86400})
		expectOK(t, r, http.StatusOK)
		if r.Data()["succeeded"] != float64(2) || r.Data()["skipped"] != float64(1) {
			t.Fatalf("add-time: %s", r.Raw)
		}
		for i, k := range keys {
			l := a.do("GET", base+"/"+k.(map[string]any)["id"].(string), nil).Data()
			want := float64(3600 + 86400)
			if i == 0 {
				want = 3600
			}
			if l["duration"] != want {
				t.Fatalf("key %d duration %v, want %v", i, l["duration"], want)
			}
		}
		entry := auditEntries(t, s, o.Token, "/api/audit?recordType=licenses&limit=1", 1)[0]
		if len(entry["after"].(map[string]any)) != 2 {
			t.Fatalf("add-time audit entry: %v", entry)
		}
	})
}

// TestBulkImports: users and keys made elsewhere come in one request each, with per-row
// results; a bad or repeated row is its own error; one audit entry per import.
func TestBulkImports(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro")
		a := api{t, s, o.Token}
		appID, secret := a.createApp("Imports")
		base := "/api/apps/" + appID

		expect(t, a.do("POST", base+"/users/import", map[string]any{"users": []any{}}), http.StatusBadRequest, "VALIDATION_ERROR")
		r := a.do("POST", base+"/users/import", map[string]any{"users": []map[string]any{
			{"username": "imp1", "password": "pw-123456", "level": 3}, {"username": "x", "password": "pw-123456"}, {"username": "imp1", "password": "pw-123456"}}})
		expectOK(t, r, http.StatusOK)
		if r.Data()["succeeded"] != float64(1) || r.Data()["failed"] != float64(2) {
			t.Fatalf("users import: %s", r.Raw)
		}
		if n := a.do("GET", base+"/users?search=imp1", nil).Data()["total"]; n != float64(1) {
			t.Fatalf("%v imported users found", n)
		}

		expect(t, a.do("POST", base+"/licenses/import", map[string]any{"licenses": make([]map[string]any, 1001)}), http.StatusBadRequest, "VALIDATION_ERROR")
		r = a.do("POST", base+"/licenses/import", map[string]any{"licenses": []map[string]any{
			{"key": "OLD-KEY-0001", "duration": 86400, "note": "from keyauth"}, {"key": "OLD-KEY-0001"}, {"key": "no"}, {"key": "old-key-0002", "level": 2}}})
		expectOK(t, r, http.StatusOK)
		res := r.Data()["results"].([]any)
		if r.Data()["succeeded"] != float64(2) || res[1].(map[string]any)["error"].(map[string]any)["code"] != "CONFLICT" ||
			res[2].(map[string]any)["error"].(map[string]any)["code"] != "VALIDATION_ERROR" {
			t.Fatalf("licenses import: %s", r.Raw)
		}
		r = a.do("POST", base+"/licenses/import", map[string]any{"licenses": []map[string]any{{"key": "OLD-KEY-0001"}}})
		if r.Data()["failed"] != float64(1) {
			t.Fatalf("an existing key imported again: %s", r.Raw)
		}
		entry := auditEntries(t, s, o.Token, "/api/audit?recordType=licenses&limit=2", 2)[1]
		if len(entry["after"].(map[string]any)) != 2 {
			t.Fatalf("licenses import audit entry: %v", entry)
		}
		// An imported key signs in.
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("license", map[string]any{"licenseKey": "old-key-0002"}), http.StatusOK)
	})
}
