package httpapi_test

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// ---------------------------------------------------------------------------------------
// The safe response profile of CLIENT-SDKS.md §3, checked on every client reply below.

var (
	profileInts  = map[string]bool{"level": true, "usedCount": true, "maxUses": true, "size": true, "duration": true}
	profileBools = map[string]bool{"success": true, "valid": true, "exists": true, "banned": true, "enabled": true,
		"updateAvailable": true, "antiDebug": true, "antiVM": true, "lockHwid": true, "lockIp": true, "lockPcName": true,
		"resumed": true, "licenseActivated": true, "returning": true, "loggedIn": true}
	profileStringLists = map[string]bool{"warnings": true, "issues": true}
	profileTimes       = map[string]bool{"expiresAt": true, "createdAt": true, "lastLoginAt": true}
)

// safe checks a client reply against the safe response profile and returns it: success is
// a boolean, a success carries data (an object or a bare array, never null), an error
// carries error{code, message}; integers, booleans, string lists and timestamps have their
// types; nothing is null and nothing is HTML-escaped.
func safe(t *testing.T, r ts.Response) ts.Response {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Raw))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("reply is not a JSON object: %v: %s", err, r.Raw)
	}
	ok, isBool := body["success"].(bool)
	if !isBool {
		t.Fatalf("success is not a boolean: %s", r.Raw)
	}
	if ok {
		switch body["data"].(type) {
		case map[string]any, []any:
		default:
			t.Fatalf("success reply whose data is not an object or an array: %s", r.Raw)
		}
	} else {
		e, _ := body["error"].(map[string]any)
		code, _ := e["code"].(string)
		msg, _ := e["message"].(string)
		if code == "" || msg == "" {
			t.Fatalf("error reply without error.code and error.message strings: %s", r.Raw)
		}
	}
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		if bytes.Contains(r.Raw, []byte(esc)) {
			t.Fatalf("reply is HTML-escaped (%s): %s", esc, r.Raw)
		}
	}
	walkProfile(t, r.Raw, "", body)
	return r
}

func walkProfile(t *testing.T, raw []byte, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			p := path + "." + k
			if m == nil {
				t.Fatalf("%s is null: %s", p, raw)
			}
			switch {
			case profileInts[k]:
				n, isNum := m.(json.Number)
				if _, err := n.Int64(); !isNum || err != nil {
					t.Fatalf("%s is not an integer: %s", p, raw)
				}
			case profileBools[k]:
				if _, isBool := m.(bool); !isBool {
					t.Fatalf("%s is not a boolean: %s", p, raw)
				}
			case profileStringLists[k]:
				list, isList := m.([]any)
				if !isList {
					t.Fatalf("%s is not an array: %s", p, raw)
				}
				for _, s := range list {
					if _, isStr := s.(string); !isStr {
						t.Fatalf("%s holds a non-string: %s", p, raw)
					}
				}
			case profileTimes[k]:
				s, isStr := m.(string)
				if _, err := time.Parse(time.RFC3339, s); !isStr || err != nil {
					t.Fatalf("%s is not an RFC 3339 string: %s", p, raw)
				}
			}
			walkProfile(t, raw, p, m)
		}
	case []any:
		for i, m := range x {
			if m == nil {
				t.Fatalf("%s[%d] is null: %s", path, i, raw)
			}
			walkProfile(t, raw, fmt.Sprintf("%s[%d]", path, i), m)
		}
	}
}

// call is a client call without a nonce, checked against the profile.
func (c *sdk) call(path string, body map[string]any) ts.Response {
	c.t.Helper()
	return safe(c.t, c.post(path, body, ""))
}

// callNonce is a nonce call (login, register, license, activate, heartbeat), checked.
func (c *sdk) callNonce(path string, body map[string]any) ts.Response {
	c.t.Helper()
	return safe(c.t, c.withNonce(path, body))
}

// clientVar is one variable as SDKs read it.
type clientVar struct{ Key, Value, Type string }

func (v clientVar) String() string { return v.Key + "=" + v.Value + ":" + v.Type }

// varOf reads {key, value, type}: all three present, all strings.
func varOf(t *testing.T, raw []byte, x any) clientVar {
	t.Helper()
	m, isObj := x.(map[string]any)
	if !isObj {
		t.Fatalf("variable is not an object: %s", raw)
	}
	k, okK := m["key"].(string)
	v, okV := m["value"].(string)
	ty, okT := m["type"].(string)
	if !okK || !okV || !okT || ty == "" {
		t.Fatalf("variable without string key, value and type: %s", raw)
	}
	return clientVar{k, v, ty}
}

// varList checks a successful list reply: data is a bare array of variables.
func varList(t *testing.T, r ts.Response) []clientVar {
	t.Helper()
	expectOK(t, r, http.StatusOK)
	if !bytes.HasPrefix(r.Raw, []byte(`{"success":true,"data":[`)) {
		t.Fatalf("list reply is not a bare array: %s", r.Raw)
	}
	list := r.Body["data"].([]any)
	out := make([]clientVar, 0, len(list))
	for _, x := range list {
		out = append(out, varOf(t, r.Raw, x))
	}
	return out
}

// oneVar checks a successful one-variable reply.
func oneVar(t *testing.T, r ts.Response) clientVar {
	t.Helper()
	expectOK(t, r, http.StatusOK)
	return varOf(t, r.Raw, r.Body["data"])
}

func expectVars(t *testing.T, got []clientVar, want ...clientVar) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("variables %v, want %v", got, want)
	}
}

// expectEmptyList checks a list reply that must be exactly [].
func expectEmptyList(t *testing.T, r ts.Response) {
	t.Helper()
	if r.Status != http.StatusOK || string(bytes.TrimSpace(r.Raw)) != `{"success":true,"data":[]}` {
		t.Fatalf("want an empty bare array: %d %s", r.Status, r.Raw)
	}
}

// register signs the SDK in as a new user.
func (c *sdk) register(username, password string) ts.Response {
	c.t.Helper()
	r := c.callNonce("register", map[string]any{"username": username, "password": password, "email": "", "displayName": "",
		"licenseKey": "", "hwid": "host-user", "pcName": ""})
	expectOK(c.t, r, http.StatusOK)
	return r
}

// ---------------------------------------------------------------------------------------
// Dashboard helpers.

func createVariable(a api, appID, key, value, typ string) string {
	a.t.Helper()
	r := a.do("POST", "/api/apps/"+appID+"/variables", map[string]any{"key": key, "value": value, "type": typ})
	expectOK(a.t, r, http.StatusCreated)
	return r.Data()["id"].(string)
}

func uploadFile(a api, appID, name, version string, content []byte) map[string]any {
	a.t.Helper()
	body, ct := multipartBody(a.t, name+".bin", content, map[string]string{"name": name, "version": version}, nil)
	r := a.s.Do(a.t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/files", Token: a.token, Body: body, ContentType: ct})
	expectOK(a.t, r, http.StatusCreated)
	return r.Data()
}

// createLicenseRecord creates one license and returns its id and key.
func createLicenseRecord(a api, appID string, extra map[string]any) (id, key string) {
	a.t.Helper()
	body := map[string]any{"count": 1}
	for k, v := range extra {
		body[k] = v
	}
	r := a.do("POST", "/api/apps/"+appID+"/licenses", body)
	expectOK(a.t, r, http.StatusCreated)
	l := r.Data()["licenses"].([]any)[0].(map[string]any)
	return l["id"].(string), l["key"].(string)
}

func userID(a api, appID, username string) string {
	a.t.Helper()
	r := a.do("GET", "/api/apps/"+appID+"/users?search="+username, nil)
	expectOK(a.t, r, http.StatusOK)
	for _, u := range r.Data()["users"].([]any) {
		if u.(map[string]any)["username"] == username {
			return u.(map[string]any)["id"].(string)
		}
	}
	a.t.Fatalf("no user %s", username)
	return ""
}

// ---------------------------------------------------------------------------------------
// An independent decryptor of CLIENT-SDKS.md §5 (it does not use core/filecrypt).

type fileKeys struct {
	master            []byte
	aes, shuf, xorKey [32]byte
}

// deriveFileKeys is §5.2: master = HMAC-SHA256(S, T + "|" + lowercase hex(N)), then
// SHA-256(master ‖ 0x01 / 0x02 / 0x03).
func deriveFileKeys(secret, token, nonceHex string) (fileKeys, error) {
	n, err := hex.DecodeString(nonceHex)
	if err != nil || len(n) == 0 {
		return fileKeys{}, fmt.Errorf("bad nonce %q", nonceHex)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(token + "|" + hex.EncodeToString(n)))
	master := m.Sum(nil)
	sub := func(b byte) [32]byte { return sha256.Sum256(append(append([]byte{}, master...), b)) }
	return fileKeys{master: master, aes: sub(1), shuf: sub(2), xorKey: sub(3)}, nil
}

const (
	lcgA = 6364136223846793005
	lcgC = 1442695040888963407
)

type lcg struct{ state uint64 }

// newLCG seeds the RNG of §5.3 from K_shuf.
func newLCG(k [32]byte) *lcg {
	s := binary.LittleEndian.Uint64(k[:8])
	for i := 8; i < 32; i++ {
		s ^= uint64(k[i]) << (8 * (i % 8))
		s = s*lcgA + lcgC
	}
	if s == 0 {
		s = 0xDEADBEEFCAFE1234
	}
	return &lcg{s}
}

func (g *lcg) next() uint64 {
	g.state = g.state*lcgA + lcgC
	return g.state
}

// swapTargets answers j for every i of the Fisher–Yates loop (i = n−1 down to 1).
func swapTargets(k [32]byte, n int) []int {
	g := newLCG(k)
	js := make([]int, n)
	for i := n - 1; i >= 1; i-- {
		js[i] = int(g.next() % uint64(i+1))
	}
	return js
}

func shuffleBytes(b []byte, k [32]byte) {
	js := swapTargets(k, len(b))
	for i := len(b) - 1; i >= 1; i-- {
		b[i], b[js[i]] = b[js[i]], b[i]
	}
}

// unshuffleBytes replays the swaps in reverse order.
func unshuffleBytes(b []byte, k [32]byte) {
	js := swapTargets(k, len(b))
	for i := 1; i < len(b); i++ {
		b[i], b[js[i]] = b[js[i]], b[i]
	}
}

// decryptFile undoes §5.3: XOR, shuffle, AES-256-GCM (IV ‖ ct ‖ tag), then zlib (or raw
// DEFLATE when rawDeflate).
func decryptFile(secret, token, nonceHex string, body []byte, rawDeflate bool) ([]byte, error) {
	k, err := deriveFileKeys(secret, token, nonceHex)
	if err != nil {
		return nil, err
	}
	buf := bytes.Clone(body)
	for p := range buf {
		buf[p] ^= k.xorKey[p%32]
	}
	unshuffleBytes(buf, k.shuf)
	if len(buf) < 28 {
		return nil, errors.New("encrypted body shorter than 28 bytes")
	}
	block, err := aes.NewCipher(k.aes[:])
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	compressed, err := gcm.Open(nil, buf[:12], buf[12:], nil)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	var r io.ReadCloser
	if rawDeflate {
		r = flate.NewReader(bytes.NewReader(compressed))
	} else if r, err = zlib.NewReader(bytes.NewReader(compressed)); err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// checkDecryptorKnownAnswers checks the decryptor's parts against the known-answer values
// of §5.3, so that a failure below is the server's and not the test's.
func checkDecryptorKnownAnswers(t *testing.T) {
	t.Helper()
	k, err := deriveFileKeys("secret-two", "tok.with-dots_and~tilde", "00FF10") // uppercase still means lowercase hex
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []struct{ name, got, want string }{
		{"master", hex.EncodeToString(k.master), "61e6c76e4ac4a166af939647539b7db80e59731cafe98091c1f9a41be4f46aa0"},
		{"K_aes", hex.EncodeToString(k.aes[:]), "a6b4145eafa447fd7faa99c1c593164109a7acfa1c9b55d77d5eeb365224e092"},
		{"K_shuf", hex.EncodeToString(k.shuf[:]), "eed14068c08e5903f7f508c7768601aa0af285c2b6fb939a1dab96b776bd26c9"},
		{"K_xor", hex.EncodeToString(k.xorKey[:]), "248ed8078448e0fe2bfc13245396cc61e25792d84f56528b065d0f0b666f05c2"},
	} {
		if kv.got != kv.want {
			t.Fatalf("test decryptor: %s %s, want %s", kv.name, kv.got, kv.want)
		}
	}
	g := newLCG(k.shuf)
	if got := fmt.Sprint(g.next(), g.next(), g.next()); got != "761956692550812525 15993357515145424504 8372064760334791783" {
		t.Fatalf("test decryptor: first next() %s", got)
	}
	b := make([]byte, 40)
	for i := range b {
		b[i] = byte(i)
	}
	shuffleBytes(b, k.shuf)
	if got := hex.EncodeToString(b); got != "14110c0a0e0308251a0b1709241b021e00071c22061d1f2310212026042716151813010d120f1905" {
		t.Fatalf("test decryptor: layer 3 %s", got)
	}
	for p := range b {
		b[p] ^= k.xorKey[p%32]
	}
	if got := hex.EncodeToString(b); got != "309fd40d8a4be8db31f7042d778dce7fe2508efa494b4da8167c2f2d624813d73c9dd90a9647f9fb" {
		t.Fatalf("test decryptor: layer 4 %s", got)
	}
	for p := range b {
		b[p] ^= k.xorKey[p%32]
	}
	unshuffleBytes(b, k.shuf)
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("test decryptor: unshuffle does not invert the shuffle: %x", b)
		}
	}
}

// download posts /api/client/file as an SDK does and reads the raw reply.
func (c *sdk) download(body map[string]any, userAgent string) (*http.Response, []byte) {
	c.t.Helper()
	if _, set := body["sessionToken"]; !set {
		body["sessionToken"] = c.token
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", c.s.URL+"/api/client/file", bytes.NewReader(raw))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", c.ip)
	if userAgent != "" {
		req.Header.Set("User-Agent", userAgent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("download: %v", err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("download: read: %v", err)
	}
	return resp, got
}

var lowerHex = regexp.MustCompile(`^(?:[0-9a-f]{2})+$`)

// decryptDownload checks an encrypted download's headers and returns the plaintext.
func (c *sdk) decryptDownload(resp *http.Response, body []byte, rawDeflate bool) []byte {
	c.t.Helper()
	nonce := resp.Header.Get("X-File-Nonce")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-File-Encrypted") != "1" || !lowerHex.MatchString(nonce) {
		c.t.Fatalf("not an encrypted download: %d %v", resp.StatusCode, resp.Header)
	}
	if resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
		c.t.Fatalf("Content-Length %q for %d bytes", resp.Header.Get("Content-Length"), len(body))
	}
	plain, err := decryptFile(c.secret, c.token, nonce, body, rawDeflate)
	if err != nil {
		c.t.Fatalf("decrypt the download: %v", err)
	}
	return plain
}

// expectDownloadError checks a failed download: a JSON envelope, without the encryption
// headers (CLIENT-SDKS.md §5.1).
func expectDownloadError(t *testing.T, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Values("X-File-Encrypted") != nil || resp.Header.Values("X-File-Nonce") != nil {
		t.Fatalf("download error: %d %v", resp.StatusCode, resp.Header)
	}
	r := safe(t, ts.Response{Status: resp.StatusCode, Header: resp.Header, Raw: body})
	var env struct {
		Success bool `json:"success"`
		Error   struct{ Code string }
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Success || env.Error.Code != code {
		t.Fatalf("download error body, want %s: %s", code, r.Raw)
	}
}

// ---------------------------------------------------------------------------------------
// Tests.

func TestClientDataSDKFlow(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("SDKFlow")
		createVariable(a, appID, "motd", "Hello <players> & friends", "STRING")
		createVariable(a, appID, "max_players", "16", "INT")
		content := []byte(strings.Repeat("game bytes ", 300))
		uploadFile(a, appID, "Game", "1.0.0", content)

		c := newSDK(t, s, secret)
		r := safe(t, c.init("1.0.0", "host-user"))
		expectOK(t, r, http.StatusOK)
		if d := r.Data(); d["sessionToken"] != c.token || d["appName"] != "SDKFlow" || d["appVersion"] != "1.0.0" {
			t.Fatalf("init: %s", r.Raw)
		}
		r = c.call("nonce", nil)
		expectOK(t, r, http.StatusOK)
		if n, _ := r.Data()["nonce"].(string); n == "" {
			t.Fatalf("nonce: %s", r.Raw)
		}

		r = c.register("flowuser", "pw-flow-1")
		d := r.Data()
		if d["key"] != "flowuser" || d["username"] != "flowuser" || d["level"] != float64(1) || d["metadata"] == nil {
			t.Fatalf("register: %s", r.Raw)
		}
		if w, isList := d["warnings"].([]any); !isList || len(w) != 0 {
			t.Fatalf("register warnings: %s", r.Raw)
		}

		vars := varList(t, c.call("variables", nil))
		expectVars(t, vars, clientVar{"max_players", "16", "INT"}, clientVar{"motd", "Hello <players> & friends", "STRING"})
		if !bytes.Contains(c.call("variables", nil).Raw, []byte(`"Hello <players> & friends"`)) {
			t.Fatal("variable value is not sent as written")
		}
		// The examples set last_seen, then list the user variables.
		v := oneVar(t, c.call("set-user-variable", map[string]any{"key": "last_seen", "value": "2026-03-18T10:00:00Z"}))
		if v != (clientVar{"last_seen", "2026-03-18T10:00:00Z", "STRING"}) {
			t.Fatalf("set-user-variable: %v", v)
		}
		expectVars(t, varList(t, c.call("user-variables", nil)), clientVar{"last_seen", "2026-03-18T10:00:00Z", "STRING"})

		r = c.callNonce("heartbeat", nil)
		expectOK(t, r, http.StatusOK)
		if _, err := time.Parse(time.RFC3339, r.Data()["expiresAt"].(string)); err != nil {
			t.Fatalf("heartbeat: %s", r.Raw)
		}

		resp, body := c.download(map[string]any{"name": "Game"}, "")
		if got := c.decryptDownload(resp, body, false); !bytes.Equal(got, content) {
			t.Fatalf("downloaded %d bytes that differ from the %d uploaded", len(got), len(content))
		}

		r = c.call("end", nil)
		expectOK(t, r, http.StatusOK)
		expect(t, c.call("variables", nil), http.StatusUnauthorized, "UNAUTHORIZED")
		resp, body = c.download(map[string]any{"name": "Game"}, "")
		expectDownloadError(t, resp, body, http.StatusUnauthorized, "UNAUTHORIZED")
	})
}

func TestClientDataAppVariables(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Vars")
		c := newSDK(t, s, secret)
		c.mustInit()
		expectEmptyList(t, c.call("variables", nil))

		createVariable(a, appID, "zeta", "<b>Z & z</b>", "STRING")
		alpha := createVariable(a, appID, "alpha", "42", "INT")
		createVariable(a, appID, "mid", `{"x":[1,2]}`, "JSON")
		createVariable(a, appID, "flag", "true", "BOOL")

		// App variables need no login: a bare array sorted by key, every value a string.
		r := c.call("variables", nil)
		expectVars(t, varList(t, r), clientVar{"alpha", "42", "INT"}, clientVar{"flag", "true", "BOOL"},
			clientVar{"mid", `{"x":[1,2]}`, "JSON"}, clientVar{"zeta", "<b>Z & z</b>", "STRING"})

		if v := oneVar(t, c.call("variable", map[string]any{"key": "alpha"})); v != (clientVar{"alpha", "42", "INT"}) {
			t.Fatalf("variable by key: %v", v)
		}
		if v := oneVar(t, c.call("variable", map[string]any{"name": "zeta"})); v != (clientVar{"zeta", "<b>Z & z</b>", "STRING"}) {
			t.Fatalf("variable by name: %v", v)
		}
		expect(t, c.call("variable", map[string]any{"key": "nope"}), http.StatusNotFound, "NOT_FOUND")
		expect(t, c.call("variable", map[string]any{"key": "ALPHA"}), http.StatusNotFound, "NOT_FOUND")
		expect(t, c.call("variable", map[string]any{"key": ""}), http.StatusBadRequest, "VALIDATION_ERROR")

		// A dashboard change shows at once.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/variables/"+alpha, map[string]any{"value": "43"}), http.StatusOK)
		if v := oneVar(t, c.call("variable", map[string]any{"key": "alpha"})); v.Value != "43" {
			t.Fatalf("variable after update: %v", v)
		}
		expectOK(t, a.do("DELETE", "/api/apps/"+appID+"/variables/"+alpha, nil), http.StatusOK)
		expect(t, c.call("variable", map[string]any{"key": "alpha"}), http.StatusNotFound, "NOT_FOUND")
		if n := len(varList(t, c.call("variables", nil))); n != 3 {
			t.Fatalf("%d variables after a delete, want 3", n)
		}
	})
}

func TestClientDataLicenseVariables(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, secret := a.createApp("LicVars")
		licID, key := createLicenseRecord(a, appID, map[string]any{"level": 2})
		otherID, otherKey := createLicenseRecord(a, appID, map[string]any{"level": 3})
		expect(t, a.do("POST", "/api/apps/"+appID+"/licenses/"+licID+"/variables", map[string]any{"key": "k", "value": "v"}),
			http.StatusForbidden, "PLAN_FEATURE")

		// The free plan has no license variables, whether or not the session is signed in.
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.callNonce("license", map[string]any{"licenseKey": key, "hwid": "h", "pcName": ""}), http.StatusOK)
		expect(t, c.call("license-variables", nil), http.StatusForbidden, "PLAN_FEATURE")
		expect(t, c.call("license-variable", map[string]any{"key": "tier"}), http.StatusForbidden, "PLAN_FEATURE")

		setPlan(t, s, o.Username, "pro")
		// The plan reaches the app's actor when the app snapshot reloads; an app change forces it.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"description": "pro now"}), http.StatusOK)
		probe := newSDK(t, s, secret)
		probe.mustInit()
		for i := 0; ; i++ { // a session that is not signed in: PLAN_FEATURE, then NOT_LOGGED_IN on Pro
			code := probe.call("license-variables", nil).Code()
			if code == "NOT_LOGGED_IN" {
				break
			}
			if code != "PLAN_FEATURE" || i == 40 {
				t.Fatalf("license-variables of a session without login on Pro: %q", code)
			}
			time.Sleep(100 * time.Millisecond)
		}
		expect(t, probe.call("license-variable", map[string]any{"key": "tier"}), http.StatusUnauthorized, "NOT_LOGGED_IN")

		base := "/api/apps/" + appID + "/licenses/"
		for _, kv := range [][3]string{{"tier", "gold", "STRING"}, {"seats", "5", "INT"}, {"beta", "true", "BOOL"}} {
			expectOK(t, a.do("POST", base+licID+"/variables", map[string]any{"key": kv[0], "value": kv[1], "type": kv[2]}), http.StatusCreated)
		}
		expectOK(t, a.do("POST", base+otherID+"/variables", map[string]any{"key": "tier", "value": "silver"}), http.StatusCreated)

		// The user who signed in with the key sees its variables, sorted by key.
		expectVars(t, varList(t, c.call("license-variables", nil)),
			clientVar{"beta", "true", "BOOL"}, clientVar{"seats", "5", "INT"}, clientVar{"tier", "gold", "STRING"})
		if v := oneVar(t, c.call("license-variable", map[string]any{"key": "seats"})); v != (clientVar{"seats", "5", "INT"}) {
			t.Fatalf("license-variable: %v", v)
		}
		if v := oneVar(t, c.call("license-variable", map[string]any{"name": "tier"})); v.Value != "gold" {
			t.Fatalf("license-variable by name: %v", v)
		}
		expect(t, c.call("license-variable", map[string]any{"key": "nope"}), http.StatusNotFound, "NOT_FOUND")

		// Another key's user sees only that key's variables.
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		expectOK(t, c2.callNonce("license", map[string]any{"licenseKey": otherKey, "hwid": "h2"}), http.StatusOK)
		expectVars(t, varList(t, c2.call("license-variables", nil)), clientVar{"tier", "silver", "STRING"})

		// A user without a license: an empty list, and no variable.
		c3 := newSDK(t, s, secret)
		c3.mustInit()
		c3.register("nolicense", "pw-nolicense-1")
		expectEmptyList(t, c3.call("license-variables", nil))
		expect(t, c3.call("license-variable", map[string]any{"key": "tier"}), http.StatusNotFound, "NOT_FOUND")
	})
}

func TestClientDataUserVariables(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("UserVars")
		createVariable(a, appID, "a_key", "app scope", "STRING") // app variables stay apart

		c := newSDK(t, s, secret)
		c.mustInit()
		for path, body := range map[string]map[string]any{"user-variables": nil, "user-variable": {"key": "k"},
			"set-user-variable": {"key": "k", "value": "v"}, "delete-user-variable": {"key": "k"}} {
			expect(t, c.call(path, body), http.StatusUnauthorized, "NOT_LOGGED_IN")
		}
		c.register("dave", "pw-dave-1")
		expectEmptyList(t, c.call("user-variables", nil))

		set := func(key, value string) clientVar {
			t.Helper()
			return oneVar(t, c.call("set-user-variable", map[string]any{"key": key, "value": value}))
		}
		if v := set("last_seen", "day 1"); v != (clientVar{"last_seen", "day 1", "STRING"}) {
			t.Fatalf("set creates: %v", v)
		}
		if v := set("last_seen", "day 2"); v != (clientVar{"last_seen", "day 2", "STRING"}) {
			t.Fatalf("set overwrites: %v", v)
		}
		set("b_key", "x")
		set("a_key", "<y & z>")
		expect(t, c.call("set-user-variable", map[string]any{"key": "", "value": "v"}), http.StatusBadRequest, "VALIDATION_ERROR")

		r := c.call("user-variables", nil)
		expectVars(t, varList(t, r), clientVar{"a_key", "<y & z>", "STRING"}, clientVar{"b_key", "x", "STRING"},
			clientVar{"last_seen", "day 2", "STRING"})
		if v := oneVar(t, c.call("user-variable", map[string]any{"key": "a_key"})); v.Value != "<y & z>" {
			t.Fatalf("user-variable by key: %v", v)
		}
		if v := oneVar(t, c.call("user-variable", map[string]any{"name": "last_seen"})); v.Value != "day 2" {
			t.Fatalf("user-variable by name: %v", v)
		}
		expect(t, c.call("user-variable", map[string]any{"key": "nope"}), http.StatusNotFound, "NOT_FOUND")

		// The dashboard sees the same variables of the user.
		dash := a.do("GET", "/api/apps/"+appID+"/users/"+userID(a, appID, "dave")+"/variables", nil)
		expectOK(t, dash, http.StatusOK)
		if list := dash.Body["data"].([]any); len(list) != 3 || list[2].(map[string]any)["value"] != "day 2" {
			t.Fatalf("dashboard view of the user variables: %s", dash.Raw)
		}

		r = c.call("delete-user-variable", map[string]any{"key": "b_key"})
		expectOK(t, r, http.StatusOK)
		if _, isObj := r.Body["data"].(map[string]any); !isObj {
			t.Fatalf("delete-user-variable data is not an object: %s", r.Raw)
		}
		expect(t, c.call("delete-user-variable", map[string]any{"key": "b_key"}), http.StatusNotFound, "NOT_FOUND")
		expect(t, c.call("user-variable", map[string]any{"key": "b_key"}), http.StatusNotFound, "NOT_FOUND")
		expectVars(t, varList(t, c.call("user-variables", nil)), clientVar{"a_key", "<y & z>", "STRING"},
			clientVar{"last_seen", "day 2", "STRING"})

		// Another user has variables of their own.
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		c2.register("erin", "pw-erin-1")
		expectEmptyList(t, c2.call("user-variables", nil))
		expect(t, c2.call("user-variable", map[string]any{"key": "a_key"}), http.StatusNotFound, "NOT_FOUND")
		expect(t, c2.call("delete-user-variable", map[string]any{"key": "a_key"}), http.StatusNotFound, "NOT_FOUND")
		if v := oneVar(t, c.call("user-variable", map[string]any{"key": "a_key"})); v.Value != "<y & z>" {
			t.Fatalf("dave's variable after erin's delete: %v", v)
		}
	})
}

func TestClientDataFileDownload(t *testing.T) {
	checkDecryptorKnownAnswers(t)
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Downloads")
		random := make([]byte, 3000)
		_, _ = rand.Read(random)
		content := append(bytes.Repeat([]byte("keyward file \x00\xff "), 400), random...)
		sum := sha256.Sum256(content)
		hash := hex.EncodeToString(sum[:])
		uploadFile(a, appID, "Game", "2.3.4", content)

		c := newSDK(t, s, secret)
		c.mustInit()
		checkHeaders := func(resp *http.Response) {
			t.Helper()
			if resp.Header.Get("X-File-Hash") != hash || resp.Header.Get("X-File-Version") != "2.3.4" {
				t.Fatalf("file headers: %v", resp.Header)
			}
		}

		// A default User-Agent (Go, Python, Node, …) gets the zlib form, fresh for every download.
		resp, body := c.download(map[string]any{"name": "Game"}, "")
		checkHeaders(resp)
		if bytes.Contains(body, []byte("keyward file")) {
			t.Fatal("the encrypted body holds plaintext")
		}
		if got := c.decryptDownload(resp, body, false); !bytes.Equal(got, content) {
			t.Fatalf("zlib download: %d bytes differ from the %d uploaded", len(got), len(content))
		}
		resp2, body2 := c.download(map[string]any{"fileName": "Game"}, "python-requests/2.31")
		if got := c.decryptDownload(resp2, body2, false); !bytes.Equal(got, content) {
			t.Fatal("second download differs")
		}
		if resp2.Header.Get("X-File-Nonce") == resp.Header.Get("X-File-Nonce") || bytes.Equal(body, body2) {
			t.Fatal("two downloads share a nonce or a body")
		}
		// The keys are the session's: another session's token does not open it.
		other := newSDK(t, s, secret)
		other.mustInit()
		if _, err := decryptFile(secret, other.token, resp.Header.Get("X-File-Nonce"), body, false); err == nil {
			t.Fatal("the download decrypts with another session's token")
		}

		// Lua cannot decrypt: plain bytes without the encryption headers.
		resp, body = c.download(map[string]any{"name": "Game"}, "LuaSocket 3.0")
		checkHeaders(resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Values("X-File-Encrypted") != nil || resp.Header.Values("X-File-Nonce") != nil ||
			!bytes.Equal(body, content) {
			t.Fatalf("LuaSocket download: %d %v (%d bytes)", resp.StatusCode, resp.Header, len(body))
		}

		// Swift (CFNetwork) inflates raw DEFLATE.
		resp, body = c.download(map[string]any{"name": "Game"}, "MyGame/1 CFNetwork/1494.0.7 Darwin/23.4.0")
		checkHeaders(resp)
		if got := c.decryptDownload(resp, body, true); !bytes.Equal(got, content) {
			t.Fatal("CFNetwork download differs")
		}
		if _, err := decryptFile(secret, c.token, resp.Header.Get("X-File-Nonce"), body, false); err == nil {
			t.Fatal("the CFNetwork download is a zlib stream, not raw DEFLATE")
		}

		// Errors are JSON envelopes without the encryption headers.
		resp, body = c.download(map[string]any{"name": "Nope"}, "")
		expectDownloadError(t, resp, body, http.StatusNotFound, "NOT_FOUND")
		resp, body = c.download(map[string]any{"name": ""}, "")
		expectDownloadError(t, resp, body, http.StatusBadRequest, "VALIDATION_ERROR")
		resp, body = c.download(map[string]any{"name": "Game", "sessionToken": "not-a-session"}, "")
		expectDownloadError(t, resp, body, http.StatusUnauthorized, "UNAUTHORIZED")

		// The newest upload of a name is the one served.
		newer := []byte("version three")
		uploadFile(a, appID, "Game", "3.0.0", newer)
		resp, body = c.download(map[string]any{"name": "Game"}, "")
		if got := c.decryptDownload(resp, body, false); !bytes.Equal(got, newer) || resp.Header.Get("X-File-Version") != "3.0.0" {
			t.Fatalf("newest file: %q %v", got, resp.Header)
		}
	})
}

func TestClientDataCheckUpdate(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Updates")
		c := newSDK(t, s, secret)
		c.mustInit()
		check := func(body map[string]any) map[string]any {
			t.Helper()
			r := c.call("check-update", body)
			expectOK(t, r, http.StatusOK)
			return r.Data()
		}

		// No file at all: no update.
		d := check(map[string]any{"currentVersion": "1.0.0", "fileName": ""})
		if d["updateAvailable"] != false || d["currentVersion"] != "1.0.0" || d["file"] != nil {
			t.Fatalf("check-update without files: %v", d)
		}

		uploadFile(a, appID, "Loader", "1.0.0", []byte("loader"))
		game := bytes.Repeat([]byte("g"), 1234)
		sum := sha256.Sum256(game)
		uploadFile(a, appID, "Game", "1.10.0", game)

		// fileName "" (the SDK default), missing (Lua) or null (Java): the app's newest file.
		for _, body := range []map[string]any{{"currentVersion": "1.2.0", "fileName": ""}, {"currentVersion": "1.2.0"},
			{"currentVersion": "1.2.0", "fileName": nil}} {
			d = check(body)
			f, _ := d["file"].(map[string]any)
			if d["updateAvailable"] != true || d["latestVersion"] != "1.10.0" || d["currentVersion"] != "1.2.0" || f == nil ||
				f["name"] != "Game" || f["version"] != "1.10.0" || f["size"] != float64(len(game)) || f["hash"] != hex.EncodeToString(sum[:]) {
				t.Fatalf("check-update %v: %v", body, d)
			}
		}
		// 1.10.0 is not older than itself, and 1.9.9 is older (numeric, not text, comparison).
		if d = check(map[string]any{"currentVersion": "1.10.0", "fileName": ""}); d["updateAvailable"] != false || d["latestVersion"] != "1.10.0" {
			t.Fatalf("check-update at the newest version: %v", d)
		}
		if d = check(map[string]any{"currentVersion": "1.9.9", "fileName": ""}); d["updateAvailable"] != true {
			t.Fatalf("check-update from 1.9.9: %v", d)
		}
		if d = check(map[string]any{"currentVersion": "1.11.0", "fileName": "Game"}); d["updateAvailable"] != false {
			t.Fatalf("check-update from a newer version: %v", d)
		}
		// A named file is compared with that file.
		d = check(map[string]any{"currentVersion": "1.0.0", "fileName": "Loader"})
		if f, _ := d["file"].(map[string]any); d["updateAvailable"] != false || d["latestVersion"] != "1.0.0" || f == nil || f["name"] != "Loader" {
			t.Fatalf("check-update of Loader: %v", d)
		}
		if d = check(map[string]any{"currentVersion": "0.9", "fileName": "Loader"}); d["updateAvailable"] != true {
			t.Fatalf("check-update of Loader from 0.9: %v", d)
		}
		if d = check(map[string]any{"currentVersion": "1.0.0", "fileName": "Nope"}); d["updateAvailable"] != false || d["file"] != nil {
			t.Fatalf("check-update of an unknown file: %v", d)
		}
	})
}

func TestClientDataUserProfile(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Profile")
		c := newSDK(t, s, secret)
		c.mustInit()
		expect(t, c.call("user", nil), http.StatusUnauthorized, "NOT_LOGGED_IN")
		expectOK(t, c.callNonce("register", map[string]any{"username": "frank", "password": "pw-frank-1", "email": "frank@example.com",
			"displayName": "", "licenseKey": "", "hwid": "h", "pcName": ""}), http.StatusOK)
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+userID(a, appID, "frank"),
			map[string]any{"metadata": map[string]any{"tier": "gold"}, "level": 5}), http.StatusOK)

		r := c.call("user", nil)
		expectOK(t, r, http.StatusOK)
		d := r.Data()
		meta, _ := d["metadata"].(map[string]any)
		avatar, _ := d["avatarUrl"].(string)
		created, err := time.Parse(time.RFC3339, fmt.Sprint(d["createdAt"]))
		if d["key"] != "frank" || d["username"] != "frank" || d["email"] != "frank@example.com" || d["level"] != float64(5) ||
			!strings.HasPrefix(avatar, "https://") || d["discordId"] != "" || meta["tier"] != "gold" || err != nil ||
			time.Since(created) > time.Minute {
			t.Fatalf("user: %s", r.Raw)
		}

		// A license user's key is the license key.
		_, key := createLicenseRecord(a, appID, map[string]any{"level": 7})
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		expectOK(t, c2.callNonce("license", map[string]any{"licenseKey": key, "hwid": "h"}), http.StatusOK)
		r = c2.call("user", nil)
		expectOK(t, r, http.StatusOK)
		if d := r.Data(); d["key"] != key || d["level"] != float64(7) || d["email"] != "" {
			t.Fatalf("license user: %s", r.Raw)
		}
		if meta, isObj := r.Data()["metadata"].(map[string]any); !isObj || len(meta) != 0 {
			t.Fatalf("license user metadata: %s", r.Raw)
		}
	})
}

func TestClientDataLog(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Logs")
		c := newSDK(t, s, secret)
		c.mustInit()
		c.register("gina", "pw-gina-1")

		expect(t, c.call("log", map[string]any{"level": "INFO"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, c.call("log", map[string]any{"message": "   "}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, c.call("log", map[string]any{"message": "x", "level": "LOUD"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, c.call("log", map[string]any{"message": strings.Repeat("m", 2001)}), http.StatusBadRequest, "VALIDATION_ERROR")

		r := c.call("log", map[string]any{"message": "player <opened> the shop", "level": ""})
		expectOK(t, r, http.StatusOK)
		if _, isObj := r.Body["data"].(map[string]any); !isObj {
			t.Fatalf("log data: %s", r.Raw)
		}
		entry := waitLog(t, a, appID, "client.log")
		if entry["message"] != "player <opened> the shop" || entry["level"] != "INFO" || entry["username"] != "gina" ||
			entry["ipAddress"] != c.ip {
			t.Fatalf("client.log entry: %v", entry)
		}

		// A client cannot pass its entries off as the server's events: a forged user.ban would
		// reach the owner's webhooks and end the named user's sessions.
		victim := newSDK(t, s, secret)
		victim.mustInit()
		victim.register("hank", "pw-hank-1")
		for _, event := range []string{"user.ban", "User.Delete", "app.update", "session.end", "license.activate", "user", "ws.hook"} {
			r := c.call("log", map[string]any{"message": "forged", "event": event, "data": map[string]any{"userId": userID(a, appID, "hank")}})
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
			if f := r.Body["error"].(map[string]any)["field"]; f != "event" {
				t.Fatalf("forged %s: field %v", event, f)
			}
		}

		expectOK(t, c.call("log", map[string]any{"message": "crashed", "level": "error", "event": "game.crash",
			"data": map[string]any{"scene": "boss"}}), http.StatusOK)
		entry = waitLog(t, a, appID, "game.crash")
		if data, _ := entry["data"].(map[string]any); entry["level"] != "ERROR" || entry["username"] != "gina" || data["scene"] != "boss" {
			t.Fatalf("game.crash entry: %v", entry)
		}
		expectOK(t, victim.call("user", nil), http.StatusOK)
	})
}

func TestClientDataToken(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Tokens")
		newToken := func(body map[string]any) (id, value string) {
			t.Helper()
			body["count"] = 1
			r := a.do("POST", "/api/apps/"+appID+"/tokens", body)
			expectOK(t, r, http.StatusCreated)
			tok := r.Data()["tokens"].([]any)[0].(map[string]any)
			return tok["id"].(string), tok["token"].(string)
		}
		onceID, once := newToken(map[string]any{"maxUses": 1, "level": 4})
		_, many := newToken(map[string]any{"level": 2})

		c := newSDK(t, s, secret)
		c.mustInit()
		use := func(token string) map[string]any {
			t.Helper()
			r := c.call("token", map[string]any{"token": token})
			expectOK(t, r, http.StatusOK)
			return r.Data()
		}
		if d := use(once); d["valid"] != true || d["level"] != float64(4) {
			t.Fatalf("first use: %v", d)
		}
		if d := use(once); d["valid"] != false {
			t.Fatalf("second use of a one-use token: %v", d)
		}
		for range 3 {
			if d := use(many); d["valid"] != true || d["level"] != float64(2) {
				t.Fatalf("unlimited token: %v", d)
			}
		}
		if d := use("no-such-token"); d["valid"] != false {
			t.Fatalf("unknown token: %v", d)
		}
		expect(t, c.call("token", map[string]any{"token": ""}), http.StatusBadRequest, "VALIDATION_ERROR")

		// Only the successful use counted.
		r := a.do("GET", "/api/apps/"+appID+"/tokens", nil)
		expectOK(t, r, http.StatusOK)
		for _, x := range r.Data()["tokens"].([]any) {
			tok := x.(map[string]any)
			if want := map[string]float64{once: 1, many: 3}[tok["token"].(string)]; tok["usedCount"] != want {
				t.Fatalf("usedCount of %v, want %v", tok, want)
			}
		}
		// A disabled token is not valid.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/tokens/"+onceID, map[string]any{"maxUses": 0}), http.StatusOK)
		if d := use(once); d["valid"] != true {
			t.Fatalf("token after maxUses was lifted: %v", d)
		}
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/tokens/"+onceID, map[string]any{"enabled": false}), http.StatusOK)
		if d := use(once); d["valid"] != false {
			t.Fatalf("disabled token: %v", d)
		}
	})
}

func TestClientDataCheckLicense(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("CheckLic")
		licID, key := createLicenseRecord(a, appID, map[string]any{"level": 2, "maxUses": 3, "duration": 86400})
		c := newSDK(t, s, secret)
		c.mustInit()
		check := func(path, k string) ts.Response {
			t.Helper()
			r := c.call(path, map[string]any{"licenseKey": k})
			expectOK(t, r, http.StatusOK)
			return r
		}

		r := check("check-license", "NOPE-00000-00000-00000-00000")
		d := r.Data()
		if d["valid"] != false || d["exists"] != false || fmt.Sprint(d["issues"]) != "[not_found]" || fmt.Sprint(d["reason"]) == "" || d["reason"] == nil || d["license"] != nil {
			t.Fatalf("unknown key: %s", r.Raw)
		}
		for _, path := range []string{"check-license", "check"} {
			r = check(path, key)
			d = r.Data()
			l, _ := d["license"].(map[string]any)
			if d["valid"] != true || d["exists"] != true || d["banned"] != false || d["enabled"] != true || fmt.Sprint(d["issues"]) != "[]" ||
				l == nil || l["level"] != float64(2) || l["usedCount"] != float64(0) || l["maxUses"] != float64(3) || l["duration"] != float64(86400) {
				t.Fatalf("%s of a valid key: %s", path, r.Raw)
			}
		}
		// /check without a licenseKey is still the session check.
		r = c.call("check", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["valid"] != true || r.Data()["exists"] != nil {
			t.Fatalf("session check: %s", r.Raw)
		}
		expect(t, c.call("check-license", map[string]any{"licenseKey": ""}), http.StatusBadRequest, "VALIDATION_ERROR")

		// A use and a ban show.
		u := newSDK(t, s, secret)
		u.mustInit()
		expectOK(t, u.callNonce("license", map[string]any{"licenseKey": key, "hwid": "h"}), http.StatusOK)
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/licenses/"+licID, map[string]any{"banned": true}), http.StatusOK)
		r = check("check-license", key)
		d = r.Data()
		l, _ := d["license"].(map[string]any)
		if d["valid"] != false || d["exists"] != true || d["banned"] != true || fmt.Sprint(d["issues"]) != "[banned]" || l["usedCount"] != float64(1) ||
			l["usedBy"] != key {
			t.Fatalf("banned, used key: %s", r.Raw)
		}
	})
}

func TestClientDataChangePassword(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		_, secret := a.createApp("Passwords")
		c := newSDK(t, s, secret)
		c.mustInit()
		expect(t, c.call("change-password", map[string]any{"currentPassword": "pw-holly-1", "newPassword": "pw-holly-2"}),
			http.StatusUnauthorized, "NOT_LOGGED_IN")
		c.register("holly", "pw-holly-1")

		expect(t, c.call("change-password", map[string]any{"currentPassword": "wrong", "newPassword": "pw-holly-2"}),
			http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, c.call("change-password", map[string]any{"currentPassword": "pw-holly-1", "newPassword": ""}),
			http.StatusBadRequest, "VALIDATION_ERROR")
		r := c.call("change-password", map[string]any{"currentPassword": "pw-holly-1", "newPassword": "pw-holly-2"})
		expectOK(t, r, http.StatusOK)
		// The session goes on.
		expectOK(t, c.call("user", nil), http.StatusOK)

		login := func(password string) ts.Response {
			t.Helper()
			l := newSDK(t, s, secret)
			l.mustInit()
			return l.callNonce("login", map[string]any{"username": "holly", "password": password, "licenseKey": "", "hwid": "h", "pcName": ""})
		}
		expect(t, login("pw-holly-1"), http.StatusUnauthorized, "UNAUTHORIZED")
		r = login("pw-holly-2")
		expectOK(t, r, http.StatusOK)
		if r.Data()["username"] != "holly" {
			t.Fatalf("login with the new password: %s", r.Raw)
		}
	})
}

func TestClientDataRateLimit(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		_, secret := a.createApp("Limits")
		c := newSDK(t, s, secret)
		c.mustInit() // the first of the 60 calls of the minute
		for i := 2; i <= 60; i++ {
			if r := c.post("check", nil, ""); r.Status != http.StatusOK {
				t.Fatalf("call %d: %d %s", i, r.Status, r.Raw)
			}
		}
		r := c.call("check", nil)
		expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
		if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 || n > 60 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		// Every client route shares the budget, the file download too.
		expect(t, c.call("variables", nil), http.StatusTooManyRequests, "RATE_LIMITED")
		resp, body := c.download(map[string]any{"name": "x"}, "")
		expectDownloadError(t, resp, body, http.StatusTooManyRequests, "RATE_LIMITED")
		// Another address is not limited, and the same session works from there.
		moved := *c
		moved.ip = nextIP()
		expectOK(t, moved.call("check", nil), http.StatusOK)
	})
}

func TestClientDataQuota(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		env["KEYWARD_PLAN_PRO_MAX_API_CALLS"] = "5"
		s := ts.StartEnv(t, env)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		_, secret := a.createApp("Quota")
		setPlan(t, s, o.Username, "pro") // before the first client call

		c := newSDK(t, s, secret)
		c.mustInit() // call 1
		for i := 2; i <= 5; i++ {
			expectOK(t, c.call("check", nil), http.StatusOK)
		}
		expect(t, c.call("check", nil), http.StatusTooManyRequests, "QUOTA_EXCEEDED")
		expect(t, c.call("variables", nil), http.StatusTooManyRequests, "QUOTA_EXCEEDED")
		expect(t, newSDK(t, s, secret).init("1.0.0", "h"), http.StatusTooManyRequests, "QUOTA_EXCEEDED")
		resp, body := c.download(map[string]any{"name": "x"}, "")
		expectDownloadError(t, resp, body, http.StatusTooManyRequests, "QUOTA_EXCEEDED")

		// Refused calls are not counted: the owner has used exactly the quota.
		if err := s.Node.Core().Meter.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		me := a.do("GET", "/api/auth/me", nil)
		expectOK(t, me, http.StatusOK)
		if used := me.Data()["apiCallsUsed"]; used != float64(5) {
			t.Fatalf("apiCallsUsed %v, want 5: %s", used, me.Raw)
		}
	})
}
