package web

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// mount answers a handler that serves the pages and answers the rest as the API router
// would: a 404 with its own mark.
func mount(t *testing.T, o Options) http.Handler {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.Serve(w, r) {
			return
		}
		w.Header().Set("X-From", "api")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"success":false}`)
	})
}

func get(h http.Handler, method, path string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var assetRE = regexp.MustCompile(`(?:src|href)="(/ui/[0-9a-f]{12}/[^"]+)"`)

func TestThePageIsServedWithItsSecurityHeadersAndNoCache(t *testing.T) {
	h := mount(t, Options{MailToFiles: true})
	for _, p := range []string{"/", "/verify-email", "/reset-password"} {
		w := get(h, "GET", p+"?token=abc")
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %s", p, w.Code, w.Header().Get("Content-Type"))
		}
		for k, want := range map[string]string{"Content-Security-Policy": ContentSecurityPolicy, "X-Frame-Options": "DENY",
			"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"} {
			if got := w.Header().Get(k); got != want {
				t.Fatalf("%s: %s = %q, want %q", p, k, got, want)
			}
		}
		body := w.Body.String()
		if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, "<style") {
			t.Fatalf("inline script or style in the page:\n%s", body)
		}
		// The page says mails go to files, not where: the folder is told to signed-in
		// owners only.
		if !strings.Contains(body, `<meta name="keyward-mail" content="outbox">`) || strings.Contains(body, "keyward-outbox") {
			t.Fatalf("mail hint:\n%s", body)
		}
	}
	for _, d := range []string{"script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, d) {
			t.Fatalf("CSP lacks %s", d)
		}
	}
}

func TestAssetsAreVersionedCompressedAndCached(t *testing.T) {
	h := mount(t, Options{})
	page := get(h, "GET", "/").Body.String()
	m := assetRE.FindAllStringSubmatch(page, -1)
	if len(m) < 3 {
		t.Fatalf("asset links in the page: %v\n%s", m, page)
	}
	for _, a := range m {
		w := get(h, "GET", a[1], "Accept-Encoding", "br, gzip")
		if w.Code != 200 || w.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || w.Header().Get("Content-Security-Policy") == "" {
			t.Fatalf("%s: %d %v", a[1], w.Code, w.Header())
		}
		if strings.HasSuffix(a[1], ".js") || strings.HasSuffix(a[1], ".css") {
			if w.Header().Get("Content-Encoding") != "gzip" || w.Header().Get("Vary") != "Accept-Encoding" {
				t.Fatalf("%s not gzipped: %v", a[1], w.Header())
			}
			z, err := gzip.NewReader(w.Body)
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := io.ReadAll(z)
			raw := get(h, "GET", a[1]) // no Accept-Encoding: plain bytes
			if raw.Header().Get("Content-Encoding") != "" || raw.Body.String() != string(plain) {
				t.Fatalf("%s: plain and gzip bodies differ", a[1])
			}
		}
		etag := w.Header().Get("ETag")
		if nm := get(h, "GET", a[1], "If-None-Match", etag); nm.Code != http.StatusNotModified || nm.Body.Len() != 0 {
			t.Fatalf("%s revalidation: %d", a[1], nm.Code)
		}
		if hd := get(h, "HEAD", a[1]); hd.Code != 200 || hd.Body.Len() != 0 {
			t.Fatalf("HEAD %s: %d %d bytes", a[1], hd.Code, hd.Body.Len())
		}
	}
	// Scripts are served as JavaScript whatever the host's mime tables say.
	js := get(h, "GET", m[len(m)-1][1])
	if js.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("script type %q", js.Header().Get("Content-Type"))
	}
}

// TestThePageNamesNoFolder: with mail over SMTP the page says nothing of files; in no case
// does it carry a path (it once named the outbox folder to anyone).
func TestThePageNamesNoFolder(t *testing.T) {
	body := get(mount(t, Options{}), "GET", "/").Body.String()
	if !strings.Contains(body, `<meta name="keyward-mail" content="">`) || strings.Contains(body, "outbox") {
		t.Fatalf("mail hint without an outbox:\n%s", body)
	}
}

func TestEverythingElseGoesToTheAPI(t *testing.T) {
	h := mount(t, Options{})
	page := get(h, "GET", "/").Body.String()
	asset := assetRE.FindStringSubmatch(page)[1]
	old := regexp.MustCompile(`/ui/[0-9a-f]{12}/`).ReplaceAllString(asset, "/ui/000000000000/")
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/apps"}, {"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/metrics"}, {"GET", "/nope"},
		{"POST", "/"}, {"DELETE", "/"}, {"POST", asset}, {"GET", old}, {"GET", "/ui/"}, {"GET", "/index.html"},
		{"GET", "/api/client/confirm-reset/abc"}, {"GET", "/verify-email/x"},
	} {
		w := get(h, c.method, c.path)
		if w.Header().Get("X-From") != "api" || w.Header().Get("Content-Security-Policy") != "" {
			t.Fatalf("%s %s was not passed to the API: %d %v", c.method, c.path, w.Code, w.Header())
		}
	}
}
