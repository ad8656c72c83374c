package httpapi_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestDashboardSocketActionsAudited: a kick sent over the owner's dashboard socket is in the
// audit log as a REST kick is (the session's account and token, the socket's IP, the user
// acted on, the socket as the source); refused socket actions are not recorded.
func TestDashboardSocketActionsAudited(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "kim")
		cl := w.clientSocket(t, s)
		ip := nextIP()
		dash := mustDialWS(t, s, "/api/apps/"+w.appID+"/ws/connect?token="+url.QueryEscape(w.a.token), ip)
		dash.ignore = []string{"session_connect"}
		dash.expectType("online_count")
		dash.expectType("sessions")

		// Refused: no user, a reason too long, an unknown type. None is a change.
		dash.send(map[string]any{"type": "kick", "reason": "no user"})
		dash.expectType("error")
		dash.send(map[string]any{"type": "ban", "userId": w.userID, "reason": strings.Repeat("x", 3000)})
		dash.expectType("error")
		dash.send(map[string]any{"type": "command"})
		dash.expectType("error")

		dash.send(map[string]any{"type": "kick", "userId": w.userID, "reason": "be nice"})
		cl.expectType("force_logout")
		if code, _ := cl.expectClosed(); code != 4001 {
			t.Fatalf("kicked with close code %d", code)
		}

		me := w.a.do("GET", "/api/auth/me", nil).Data()
		got := auditEntries(t, s, w.a.token, "/api/audit?recordType=realtime", 1)[0]
		if got["method"] != "WS" || got["route"] != "/api/apps/:appId/ws/connect" || got["appId"] != w.appID ||
			got["recordId"] != w.userID || got["ip"] != ip || got["accountId"] != me["id"] {
			t.Fatalf("socket kick entry: %v", got)
		}
		actor := got["actor"].(map[string]any)
		if actor["type"] != "session" || actor["id"] == "" || actor["name"] != me["username"] {
			t.Fatalf("socket kick actor: %v", actor)
		}
		if after, _ := got["after"].(map[string]any); after["action"] != "kick" || after["reason"] != "be nice" {
			t.Fatalf("socket kick after: %v", got["after"])
		}
		// The metric counts it with the REST routes' entries: written after the action
		// (a delivery to sockets has no write to ride; see socketAuditor).
		if n := auditWrittenCounts(t, s)["WS /api/apps/:appId/ws/connect after_change"]; n != 1 {
			t.Fatalf("socket kick entries counted after the change: %d, want 1", n)
		}
	})
}

// TestDashboardSocketBanAuditedWithTheChange: a ban sent over the owner's dashboard socket
// writes the banned flag (with user.ban) and its audit entry in the same write, on both
// engine pairs: the job's context carries the entry as the edge's draft does for a REST
// route, and the metric counts it with_change, none after.
func TestDashboardSocketBanAuditedWithTheChange(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "ben")
		cl := w.clientSocket(t, s)
		ip := nextIP()
		dash := mustDialWS(t, s, "/api/apps/"+w.appID+"/ws/connect?token="+url.QueryEscape(w.a.token), ip)
		dash.ignore = []string{"session_connect", "session_disconnect", "user_banned"}
		dash.expectType("online_count")
		dash.expectType("sessions")

		dash.send(map[string]any{"type": "ban", "userId": w.userID, "reason": "cheating"})
		if d := cl.expectType("banned"); d["reason"] != "cheating" {
			t.Fatalf("banned message: %v", d)
		}
		u := w.a.do("GET", "/api/apps/"+w.appID+"/users/"+w.userID, nil).Data()
		if u["banned"] != true {
			t.Fatalf("user after the socket ban: %v", u)
		}
		me := w.a.do("GET", "/api/auth/me", nil).Data()
		got := auditEntries(t, s, w.a.token, "/api/audit?recordType=realtime", 1)[0]
		if got["method"] != "WS" || got["route"] != "/api/apps/:appId/ws/connect" || got["appId"] != w.appID ||
			got["recordId"] != w.userID || got["ip"] != ip || got["accountId"] != me["id"] {
			t.Fatalf("socket ban entry: %v", got)
		}
		if after, _ := got["after"].(map[string]any); after["action"] != "ban" || after["reason"] != "cheating" {
			t.Fatalf("socket ban after: %v", got["after"])
		}
		// The job counts its entry once the ban's write returned, which may be after the
		// banned message reached the client: poll (bounded) for the count.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			counts := auditWrittenCounts(t, s)
			n, m := counts["WS /api/apps/:appId/ws/connect with_change"], counts["WS /api/apps/:appId/ws/connect after_change"]
			if n == 1 && m == 0 {
				break
			}
			if n+m > 0 || time.Now().After(deadline) {
				t.Fatalf("socket ban entries: %d with the change, %d after; want 1 and 0", n, m)
			}
		}
	})
}
