package httpapi_test

import (
	"fmt"
	"net/http"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	ts "github.com/keyward/keyward/internal/testserver"
)

const goodPassword = "Correct-Horse-9"

var ipCounter atomic.Int64

// nextIP gives each test client its own address, so that per-IP limits of one test do not
// touch another.
func nextIP() string {
	n := ipCounter.Add(1)
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&255, (n>>8)&255, n&255)
}

var tokenLine = regexp.MustCompile(`token: ([A-Za-z0-9_-]+)`)

// mailedToken extracts the token of a mail.
func mailedToken(t *testing.T, mail string) string {
	t.Helper()
	m := tokenLine.FindStringSubmatch(mail)
	if m == nil {
		t.Fatalf("no token in mail:\n%s", mail)
	}
	return m[1]
}

// owner is a registered, verified account signed in on a test server.
type owner struct {
	Username, Email, Password, Token, ID string
}

var ownerCounter atomic.Int64

// newOwner registers and verifies a fresh account through the API.
func newOwner(t *testing.T, s *ts.Server) owner {
	t.Helper()
	n := ownerCounter.Add(1)
	o := owner{Username: fmt.Sprintf("owner%d_%d", n, time.Now().UnixNano()%100000), Password: goodPassword}
	o.Email = o.Username + "@example.com"
	r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/register", IP: nextIP(),
		Body: map[string]string{"email": o.Email, "username": o.Username, "password": o.Password}})
	if r.Status != http.StatusAccepted {
		t.Fatalf("register: %d %s", r.Status, r.Raw)
	}
	token := mailedToken(t, s.WaitMail(t, o.Email, "Verify your Keyward email"))
	r = s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/verify-email", Body: map[string]string{"token": token}})
	if r.Status != http.StatusOK {
		t.Fatalf("verify: %d %s", r.Status, r.Raw)
	}
	o.Token = r.Data()["token"].(string)
	o.ID = r.Data()["account"].(map[string]any)["id"].(string)
	return o
}

func login(t *testing.T, s *ts.Server, username, password, code string) ts.Response {
	t.Helper()
	body := map[string]string{"username": username, "password": password}
	if code != "" {
		body["twoFactorCode"] = code
	}
	return s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(), Body: body})
}

// code returns the TOTP code of secret at the server's clock.
func code(t *testing.T, s *ts.Server, secret string) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, s.Clock().Now())
	if err != nil {
		t.Fatalf("totp: %v", err)
	}
	return c
}

func expect(t *testing.T, r ts.Response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if code != "" && r.Code() != code {
		t.Fatalf("code %q, want %q: %s", r.Code(), code, r.Raw)
	}
	if code != "" {
		if r.Body["success"] != false {
			t.Fatalf("error reply without success:false: %s", r.Raw)
		}
		if msg, _ := r.Body["error"].(map[string]any)["message"].(string); msg == "" {
			t.Fatalf("error reply without message: %s", r.Raw)
		}
	}
}

func expectOK(t *testing.T, r ts.Response, status int) {
	t.Helper()
	if r.Status != status || r.Body["success"] != true {
		t.Fatalf("status %d, want %d with success:true: %s", r.Status, status, r.Raw)
	}
	if _, present := r.Body["data"]; !present || r.Body["data"] == nil {
		t.Fatalf("success reply without data: %s", r.Raw)
	}
}
