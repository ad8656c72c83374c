package httpapi_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestBodyReadIsBounded holds request bodies back over real sockets: headers then nothing,
// half a body, a body trickling below the rate floor. Each is answered 408 REQUEST_TIMEOUT
// and its connection closed within a bounded wait; a body arriving slowly but above the
// floor is read to the end even though it takes longer than the timeout.
func TestBodyReadIsBounded(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		env["KEYWARD_BODY_TIMEOUT"] = "1s"
		env["KEYWARD_BODY_MIN_RATE"] = "100"
		s := ts.StartEnv(t, env)
		addr := strings.TrimPrefix(s.URL, "http://")
		const headers = "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"

		// exchange writes head, then feeds body chunks every gap on its own goroutine, and
		// reads the answer; the connection must then be closed by the server.
		exchange := func(t *testing.T, head string, chunks []string, gap time.Duration) (*http.Response, []byte) {
			t.Helper()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// The bounded wait: far above the 1 s bound, far below "indefinitely".
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			stop := make(chan struct{})
			go func() {
				defer close(done)
				for _, c := range chunks {
					select {
					case <-stop:
						return
					case <-time.After(gap):
					}
					if _, err := io.WriteString(conn, c); err != nil {
						return
					}
				}
			}()
			defer func() { close(stop); <-done }()
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("read body: %v", err)
			}
			return resp, body
		}
		wantTimeout := func(t *testing.T, resp *http.Response, body []byte) {
			t.Helper()
			var env struct {
				Success bool
				Error   struct{ Code string }
			}
			if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(body, &env) != nil || env.Success || env.Error.Code != "REQUEST_TIMEOUT" ||
				resp.Header.Get("X-Request-Id") == "" {
				t.Fatalf("answer %d %q, want 408 REQUEST_TIMEOUT envelope", resp.StatusCode, body)
			}
			if !resp.Close {
				t.Fatalf("answer does not close the connection: %v", resp.Header)
			}
		}
		wantClosed := func(t *testing.T, head string) {
			t.Helper()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("connection still open after 20 s")
			}
		}

		t.Run("headers and no body", func(t *testing.T) {
			resp, body := exchange(t, headers+"Content-Length: 100\r\n\r\n", nil, 0)
			wantTimeout(t, resp, body)
			wantClosed(t, headers+"Content-Length: 100\r\n\r\n")
		})
		t.Run("half a body", func(t *testing.T) {
			resp, body := exchange(t, headers+"Content-Length: 100\r\n\r\n{\"username\":", nil, 0)
			wantTimeout(t, resp, body)
		})
		t.Run("upload that stalls inside its file", func(t *testing.T) {
			// The upload route reads its body itself (multipart, streamed to the blob store):
			// a stall there is the same 408, not a malformed body.
			a := api{t, s, newOwner(t, s).Token}
			id, _ := a.createApp("Stalled")
			part := "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n" +
				"Content-Type: application/octet-stream\r\n\r\n0123456789"
			head := "POST /api/apps/" + id + "/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + a.token +
				"\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n" + part
			resp, body := exchange(t, head, nil, 0)
			wantTimeout(t, resp, body)
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + id + "/files", Token: a.token})
			if r.Status != http.StatusOK || strings.Contains(string(r.Raw), "x.bin") {
				t.Fatalf("the stalled upload left a file: %d %s", r.Status, r.Raw)
			}
		})
		t.Run("chunked body that never comes", func(t *testing.T) {
			resp, body := exchange(t, headers+"Transfer-Encoding: chunked\r\n\r\n", nil, 0)
			wantTimeout(t, resp, body)
		})
		t.Run("a body trickling below the rate floor", func(t *testing.T) {
			// 1 byte every 100 ms is 10 B/s, a tenth of the floor; bounded at 20 s of it.
			resp, body := exchange(t, headers+"Content-Length: 1000\r\n\r\n", strings.Split(strings.Repeat(" ", 200), ""), 100*time.Millisecond)
			wantTimeout(t, resp, body)
		})
		t.Run("a slow body above the rate floor is read whole", func(t *testing.T) {
			// 1,000 bytes in 20 chunks 100 ms apart: about 2 s (past the 1 s timeout) at
			// about 500 B/s, five times the floor.
			payload := fmt.Sprintf(`{"username":"slow%d","password":"Wrong-Password-1"}`, time.Now().UnixNano()%1e6)
			payload += strings.Repeat(" ", 1000-len(payload))
			var chunks []string
			for i := 0; i < len(payload); i += 50 {
				chunks = append(chunks, payload[i:i+50])
			}
			resp, body := exchange(t, headers+"Content-Length: 1000\r\n\r\n", chunks, 100*time.Millisecond)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"UNAUTHORIZED"`) {
				t.Fatalf("answer %d %q, want the login's own 401", resp.StatusCode, body)
			}
		})
	})
}
