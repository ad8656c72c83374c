package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/keyward/keyward/internal/testenv"
)

var binary string

// TestMain builds the real binary once; every test runs it as its own process.
func TestMain(m *testing.M) { testenv.RunWithKeyward(m, func(b string) { binary = b }) }

// chromium finds the browser, or skips (fails under KEYWARD_TEST_REQUIRE_SERVERS=1).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KEYWARD_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("KEYWARD_TEST_REQUIRE_SERVERS") == "1" {
		t.Fatal("no Chromium (set KEYWARD_TEST_CHROMIUM or install Debian's chromium; deploy/testenv.sh does)")
	}
	t.Skip("no Chromium: run under deploy/testenv.sh, which installs it")
	return ""
}

// node is a keyward serve process on the embedded default.
type node struct {
	url, dataDir string
	stderr       *testenv.LogBuffer
	addr         string
	env          []string
	stop         func()
}

func startNode(t *testing.T, env ...string) *node {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return startNodeAt(t, addr, t.TempDir(), env...)
}

func startNodeAt(t *testing.T, addr, dataDir string, env ...string) *node {
	t.Helper()
	n := &node{url: "http://" + addr, dataDir: dataDir, stderr: &testenv.LogBuffer{}, addr: addr, env: env}
	cmd := exec.Command(binary, "serve")
	testenv.DiesWithTest(cmd)
	cmd.Env = append(os.Environ(), "KEYWARD_ADDR="+addr, "KEYWARD_DATA_DIR="+n.dataDir, "KEYWARD_PUBLIC_URL="+n.url,
		"KEYWARD_ARGON2_MEMORY_KIB=1024", "KEYWARD_ARGON2_ITERATIONS=1", "KEYWARD_MONGO_URI=", "KEYWARD_REDIS_URL=", "KEYWARD_SMTP_HOST=")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = n.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var once sync.Once
	n.stop = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-done
		})
	}
	t.Cleanup(n.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(n.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return n
			}
		}
		select {
		case err := <-done:
			t.Fatalf("node exited: %v\n%s", err, n.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not ready:\n%s", n.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// admin runs a `keyward admin` command on the node's data.
func (n *node) admin(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(binary, append(append([]string{"admin"}, args...), "--data-dir", n.dataDir)...).CombinedOutput()
	if err != nil {
		t.Fatalf("admin %v: %v\n%s", args, err, out)
	}
}

// verifyLink reads the verification link from the mail to addr in the outbox.
func (n *node) verifyLink(t *testing.T, addr string) string {
	t.Helper()
	return n.mailedLink(t, addr, "verify-email")
}

// mailedLink reads the link to path (verify-email, reset-password) mailed to addr.
func (n *node) mailedLink(t *testing.T, addr, path string) string {
	t.Helper()
	linkRE := regexp.MustCompile(`https?://\S+/` + path + `\?token=[A-Za-z0-9_-]+`)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(n.dataDir, "outbox", "*.eml"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			m, err := mail.ReadMessage(bytes.NewReader(raw))
			if err != nil || !strings.Contains(m.Header.Get("To"), addr) {
				continue
			}
			var body io.Reader = m.Body
			if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
				body = quotedprintable.NewReader(body)
			}
			text, _ := io.ReadAll(body)
			if link := linkRE.FindString(string(text)); link != "" {
				return link
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s mail to %s in %s", path, addr, filepath.Join(n.dataDir, "outbox"))
	return ""
}

// call makes a JSON request and returns the envelope's data (failing unless success).
func call(t *testing.T, method, url string, hdr map[string]string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Success bool           `json:"success"`
		Data    map[string]any `json:"data"`
		Error   any            `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || !out.Success {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return out.Data
}

// browser is one headless Chromium with one tab, watching for dialogs, CSP violations and
// uncaught script errors.
type browser struct {
	t         *testing.T
	ctx       context.Context
	dialogs   atomic.Int32
	mu        sync.Mutex
	problems  []string
	artifacts string
}

// profileDir answers a fresh Chromium profile directory, removed after the test. Not
// t.TempDir: Chromium's helper processes may still write into the profile for a moment
// after the browser is cancelled, and TempDir fails the test when its removal meets a
// directory that is not empty; the removal here tries again for up to 5 s.
func profileDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "keyward-e2e-profile-")
	if err != nil {
		t.Fatalf("profile directory: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("profile directory %s left behind: %v", dir, err)
	})
	return dir
}

func newBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	// Chromium that has not printed its DevTools address within the allocator's wait (a
	// start stalled on a loaded machine: seen once in a full make test) is started once
	// more, in a fresh profile, before the test fails.
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		var b *browser
		if b, err = startBrowser(t, width, height); err == nil {
			return b
		}
		t.Logf("start Chromium, attempt %d: %v", attempt, err)
	}
	t.Fatalf("start Chromium: %v", err)
	return nil
}

// startBrowser starts a headless Chromium at the given window size; its end is the test's
// cleanup.
func startBrowser(t *testing.T, width, height int) (*browser, error) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profileDir(t)), chromedp.WindowSize(width, height),
		chromedp.WSURLReadTimeout(45 * time.Second),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp reports CDP events it has no handler for (new Chromium, older cdproto) as errors: noise.
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	t.Cleanup(func() { cancelC(); cancelA() })
	b := &browser{t: t, ctx: ctx, artifacts: artifactsDir(t)}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			b.dialogs.Add(1)
			b.problem("dialog opened: " + e.Message)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(false)) }()
		case *runtime.EventExceptionThrown:
			b.problem("uncaught: " + e.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if e.Entry.Source == log.SourceSecurity || e.Entry.Source == log.SourceJavascript {
				b.problem(string(e.Entry.Source) + ": " + e.Entry.Text)
			}
		}
	})
	if err := chromedp.Run(ctx, log.Enable(), runtime.Enable(), chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		cancelC()
		cancelA()
		return nil, err
	}
	return b, nil
}

func (b *browser) problem(s string) {
	b.mu.Lock()
	b.problems = append(b.problems, s)
	b.mu.Unlock()
}

// clean fails the test when a dialog opened, the CSP refused something or a script threw.
func (b *browser) clean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Fatalf("the page misbehaved:\n%s", strings.Join(b.problems, "\n"))
	}
}

// do runs actions with a bound; on failure it saves a screenshot and fails.
func (b *browser) do(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		var text string
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`document.querySelector('main')?.innerText ?? document.body.innerText`, &text))
		b.t.Fatalf("%s: %v\npage text:\n%s\nproblems: %v", what, err, text, b.problems)
	}
}

// js quotes a Go string for JavaScript.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitText waits until the element sel holds text.
func (b *browser) waitText(sel, text string) {
	b.t.Helper()
	b.do("wait for "+text+" in "+sel, chromedp.Poll(fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? '').includes(%s)`, js(sel), js(text)),
		nil, chromedp.WithPollingTimeout(15*time.Second)))
}

// waitGone waits until the element sel no longer holds text.
func (b *browser) waitGone(sel, text string) {
	b.t.Helper()
	b.do("wait for "+text+" to leave "+sel, chromedp.Poll(fmt.Sprintf(`!(document.querySelector(%s)?.textContent ?? '').includes(%s)`, js(sel), js(text)),
		nil, chromedp.WithPollingTimeout(15*time.Second)))
}

// click clicks the first visible button whose text is label, inside scope (a CSS selector).
func (b *browser) click(scope, label string) {
	b.t.Helper()
	expr := fmt.Sprintf(`(() => { const b = [...document.querySelectorAll(%s + ' button')].find((x) => x.textContent.trim() === %s && x.offsetParent !== null && !x.disabled); if (!b) return false; b.click(); return true; })()`, js(scope), js(label))
	b.do("click "+label, chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(15*time.Second)))
}

// fill sets inputs of the form in scope by name, as typed (input events fire).
func (b *browser) fill(scope string, values map[string]string) {
	b.t.Helper()
	for name, v := range values {
		sel := fmt.Sprintf(`%s [name=%q]`, scope, name)
		b.do("fill "+name, chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.SetValue(sel, v, chromedp.ByQuery))
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.do("read "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.TextContent(sel, &s, chromedp.ByQuery))
	return s
}

func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	b.do("evaluate", chromedp.Evaluate(expr, out))
}

func (b *browser) shot(name string) {
	var png []byte
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.Sleep(150*time.Millisecond), chromedp.CaptureScreenshot(&png)); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.artifacts, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

func artifactsDir(t *testing.T) string {
	dir := os.Getenv("KEYWARD_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "test-artifacts", "web")
	}
	dir = filepath.Join(dir, t.Name())
	_ = os.RemoveAll(dir) // screenshots of an earlier run would mislead
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts dir: %v", err)
	}
	abs, _ := filepath.Abs(dir)
	t.Logf("screenshots in %s", abs)
	return dir
}

// pollNonEmpty waits until the element sel holds some text.
func pollNonEmpty(sel string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? '').length > 0`, js(sel)), nil, chromedp.WithPollingTimeout(15*time.Second))
}
