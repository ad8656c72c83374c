package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPagesGoThroughTheMiddleware: the dashboard's page and assets carry an X-Request-Id
// and get an access log line as API answers do, and the page does not name the mail
// outbox's folder, which GET /api/auth/mail-outbox tells a signed-in owner only.
func TestPagesGoThroughTheMiddleware(t *testing.T) {
	n, token := embeddedBusinessNode(t)
	dataDir := ""
	for _, kv := range n.cmd.Env {
		if v, ok := strings.CutPrefix(kv, "KEYWARD_DATA_DIR="); ok {
			dataDir = v
		}
	}
	fetch := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(n.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, page := fetch("/")
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("GET /: %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
	if strings.Contains(page, dataDir) || strings.Contains(page, "keyward-outbox") {
		t.Fatalf("the page names the outbox folder to anyone:\n%s", page)
	}
	asset := regexp.MustCompile(`src="(/ui/[0-9a-f]{12}/[^"]+)"`).FindStringSubmatch(page)
	if asset == nil {
		t.Fatalf("no script in the page:\n%s", page)
	}
	for _, p := range []string{asset[1], "/verify-email?token=x", "/ui/000000000000/js/main.js"} {
		if resp, _ := fetch(p); resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s: %d without X-Request-Id", p, resp.StatusCode)
		}
	}
	if !strings.Contains(n.stderr.String(), "path="+asset[1]) {
		t.Errorf("no access log line for %s:\n%s", asset[1], n.stderr)
	}

	if r := call(t, "GET", n.url+"/api/auth/mail-outbox", "", nil); r.status != 401 {
		t.Fatalf("mail outbox without a session: %d %v", r.status, r.body)
	}
	if got := call(t, "GET", n.url+"/api/auth/mail-outbox", token, nil).data(200)["outbox"]; got != filepath.Join(dataDir, "outbox") {
		t.Fatalf("mail outbox for the signed-in owner: %v", got)
	}
}
