package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestAppChangeRevalidatesSocketsAtOnce: a change of the app's rules or of its owner's
// plan reaches the app's actor as a message, which revalidates the app's sockets at once:
// an open socket that the new rules or plan refuse gets force_logout and closes with
// 4000 within the read deadline of the test, not at the 30 s check.
func TestAppChangeRevalidatesSocketsAtOnce(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)

		w := newWSApp(t, s, "rita")
		c := w.clientSocket(t, s)
		expectOK(t, w.a.do("POST", "/api/apps/"+w.appID+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": w.client.ip + "/32"}), http.StatusCreated)
		if d := c.expectType("force_logout"); d["reason"] == "" {
			t.Fatalf("rule change: %v", d)
		}
		if code, _ := c.expectClosed(); code != 4000 {
			t.Fatalf("rule change closed the socket with %d, want 4000", code)
		}

		w2 := newWSApp(t, s, "paul")
		c2 := w2.clientSocket(t, s)
		setPlan(t, s, ownerOfApp(t, w2), "pro")
		if d := c2.expectType("force_logout"); !strings.Contains(d["reason"].(string), "plan") {
			t.Fatalf("plan change: %v", d)
		}
		if code, _ := c2.expectClosed(); code != 4000 {
			t.Fatalf("plan change closed the socket with %d, want 4000", code)
		}
	})
}
