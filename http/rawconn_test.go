package httpapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// rawExchange sends raw bytes on a fresh TCP connection and reads one answer.
func rawExchange(t *testing.T, s *ts.Server, request string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, body
}

// TestMalformedRequestsGetTheEnvelope sends requests net/http refuses before any handler
// runs, over a raw socket, and checks each answer is the error envelope with a request id.
func TestMalformedRequestsGetTheEnvelope(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		for _, tc := range []struct {
			name, request string
			status        int
			code          string
		}{
			{"control character in a header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n", 400, "VALIDATION_ERROR"},
			{"control character in a header name", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-\x7fBad: ab\r\n\r\n", 400, "VALIDATION_ERROR"},
			{"malformed request line", "GET\r\nHost: x\r\n\r\n", 400, "VALIDATION_ERROR"},
			{"missing Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "VALIDATION_ERROR"},
			{"unsupported protocol version", "GET /healthz HTTP/3.0\r\nHost: x\r\n\r\n", 505, "VALIDATION_ERROR"},
			{"unsupported transfer encoding", "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "VALIDATION_ERROR"},
			{"unsupported Expect", "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n", 417, "VALIDATION_ERROR"},
			{"two Content-Lengths", "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "VALIDATION_ERROR"},
			// Answered by net/http or gin with an empty or HTML body before: an unknown route now.
			{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 404, "NOT_FOUND"},
			{"trailing slash", "GET /api/auth/me/ HTTP/1.1\r\nHost: x\r\n\r\n", 404, "NOT_FOUND"},
			{"trailing slash on a POST", "POST /api/auth/login/ HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 404, "NOT_FOUND"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := rawExchange(t, s, tc.request)
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %q", resp.StatusCode, tc.status, body)
				}
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Fatalf("Content-Type %q: %q", ct, body)
				}
				if resp.Header.Get("X-Request-Id") == "" {
					t.Fatalf("no X-Request-Id: %v", resp.Header)
				}
				var env struct {
					Success *bool `json:"success"`
					Error   struct{ Code, Message string }
				}
				if err := json.Unmarshal(body, &env); err != nil || env.Success == nil || *env.Success || env.Error.Code != tc.code || env.Error.Message == "" {
					t.Fatalf("not the error envelope with %s: %q (%v)", tc.code, body, err)
				}
			})
		}
		t.Run("headers too large", func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			// Written while the answer is read: the server stops reading past its limit.
			go func() {
				_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("X-Request-Id") == "" ||
				!strings.Contains(string(body), `"code":"PAYLOAD_TOO_LARGE"`) {
				t.Fatalf("answer %d %v %q", resp.StatusCode, resp.Header, body)
			}
		})
		t.Run("well-formed requests are untouched", func(t *testing.T) {
			resp, body := rawExchange(t, s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"success":true`) {
				t.Fatalf("healthz: %d %q", resp.StatusCode, body)
			}
			resp, body = rawExchange(t, s, "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp.StatusCode != 404 || !strings.Contains(string(body), `"NOT_FOUND"`) {
				t.Fatalf("404: %d %q", resp.StatusCode, body)
			}
		})
	})
}
