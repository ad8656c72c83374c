package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestWebSocketRefusedUpgradeGetsTheEnvelope: an upgrade request the transport refuses
// (an unsupported WebSocket version) and a request that is no upgrade at all are both
// answered with the error envelope and a request id, on both channels, and open nothing.
func TestWebSocketRefusedUpgradeGetsTheEnvelope(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	w := newWSApp(t, s, "rhea")
	for _, path := range []string{w.clientSocketAt, "/api/apps/" + w.appID + "/ws/connect?token=" + url.QueryEscape(w.a.token)} {
		for _, version := range []string{"12", ""} {
			req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Forwarded-For", w.client.ip) // the session's own address: admitted, then refused
			if version != "" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "websocket")
				req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
				req.Header.Set("Sec-WebSocket-Version", version)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var env struct {
				Success *bool `json:"success"`
				Error   struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatalf("%s (version %q): not JSON: %q", path, version, body)
			}
			if resp.StatusCode != http.StatusBadRequest || env.Success == nil || *env.Success || env.Error.Code != "VALIDATION_ERROR" || env.Error.Message == "" {
				t.Fatalf("%s (version %q): %d %s", path, version, resp.StatusCode, body)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Fatalf("%s (version %q): no request id", path, version)
			}
		}
	}
	waitFor(t, func() bool {
		return w.a.do("GET", "/api/apps/"+w.appID+"/ws/online", nil).Data()["count"] == float64(0)
	})
	// The session may still open its socket.
	w.clientSocket(t, s)
}
