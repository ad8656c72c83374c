package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	httpapi "github.com/keyward/keyward/http"
	ts "github.com/keyward/keyward/internal/testserver"
)

// routesOf builds the http package's router over the node's own services and answers
// every route it registers: the list the bad-input walk covers is the router's, not a copy.
func routesOf(t *testing.T, s *ts.Server) gin.RoutesInfo {
	t.Helper()
	c := s.Node.Core()
	h, err := httpapi.New(httpapi.Deps{Accounts: c.Accounts, APIKeys: apikeys.New(c.Store, s.Clock().Now), Audit: c.Audit, Apps: c.Apps,
		Variables: c.Variables, Rules: c.Rules, Logs: c.Logs, Analytics: c.Analytics, Files: c.Files,
		Integrations: c.Integrations, Client: c.Client, Realtime: c.Realtime, WSHooks: c.WSHooks, Limiter: c.Engine,
		Metrics: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, httpapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return h.(*gin.Engine).Routes()
}

// routeGroup names the group a route belongs to in the report.
func routeGroup(path string) string {
	p := strings.Split(strings.TrimPrefix(path, "/api/"), "/")
	switch {
	case !strings.HasPrefix(path, "/api/"):
		return "probes"
	case p[0] == "auth" && len(p) > 1 && p[1] == "api-keys":
		return "api-keys"
	case p[0] != "apps" || len(p) < 3:
		return p[0]
	}
	switch {
	case p[2] == "ws" && len(p) > 3 && p[3] == "hooks":
		return "ws hooks"
	case p[2] == "secret" || p[2] == "signing-key" || p[2] == "stats":
		return "apps"
	}
	return p[2] // /api/apps/:appId/<group>/...
}

// authOf is the valid credential each group takes.
type authKind int

const (
	authNone authKind = iota
	authOwner
	authAdmin
	authClient
)

func authFor(path string) authKind {
	switch {
	case strings.HasPrefix(path, "/api/admin"):
		return authAdmin
	case strings.HasPrefix(path, "/api/client"):
		return authClient
	case strings.HasPrefix(path, "/api/auth/"):
		switch strings.TrimPrefix(path, "/api/auth/") {
		case "register", "login", "verify-email", "resend-verification", "forgot-password", "reset-password", "reset-password-2fa":
			return authNone
		}
		return authOwner
	case strings.HasPrefix(path, "/api/apps"), strings.HasPrefix(path, "/api/integrations"):
		return authOwner
	}
	return authNone
}

// spoils are routes whose success with an ignored body would end the fixture's sessions
// or data the rest of the walk uses: they get the bad path cases only.
var spoils = map[string]bool{
	"POST /api/auth/logout":                               true,
	"POST /api/client/logout":                             true,
	"POST /api/apps/:appId/users/:userId/kill-sessions":   true,
	"POST /api/apps/:appId/ws/users/:userId/kick":         true,
	"POST /api/apps/:appId/ws/users/:userId/force-logout": true,
	"POST /api/apps/:appId/ws/users/:userId/ban":          true,
	"POST /api/auth/api-key/regenerate":                   true,
	"POST /api/apps/:appId/secret/regenerate":             true,
}

// htmlPages answer a browser (a link in a mail) with an HTML page, refusals included.
var htmlPages = map[string]bool{"GET /api/client/confirm-reset/:token": true}

type badCase struct {
	name, method, path, body string
	// refuse: the case must be refused (4xx), not only survived.
	refuse bool
}

var badParams = map[string]string{
	"nonexistent": "000000000000000000000000",
	"x":           "x",
	"long":        strings.Repeat("a", 3000),
	"unicode":     url.PathEscape("é😀\u202e"),
	"dotdot":      "..%2f..%2fetc%2fpasswd",
}

var badBodies = []struct{ name, body string }{
	{"malformed", `{"name": "x",`},
	{"array", `[{"name":"x"}]`},
	{"string", `"name"`},
	{"number", `12`},
	{"null", `null`},
	{"two objects", `{}{}`},
	{"wrong member types", `{"name":[1],"username":{},"password":12,"email":true,"key":[],"value":[[]],"count":"many","level":"high","duration":"1d","type":5,"enabled":"yes","expiresAt":12,"scopes":"all","event":{},"conditions":"x","actions":{},"plan":[],"role":1,"days":"x","userId":[],"message":{},"payload":"x","reason":[],"url":3}`},
	{"oversized", `{"name":"` + strings.Repeat("a", 1<<20+10) + `"}`},
}

var badQueries = []string{
	"limit=-1", "limit=99999999999999999999", "offset=-5", "limit=abc&offset=xyz", "page=0&pageSize=-3",
	"from=notadate&to=2026-13-45", "since=yesterday&until=%00", "days=-1", "days=abc", "search=" + strings.Repeat("%25", 2000),
	"type=%ff%fe&status=%00&event=" + url.QueryEscape("'\"<>"),
	"period=forever", "hours=-1", "hours=abc", "hours=99999999999", "startDate=notadate&endDate=2026-13-45",
	"startDate=2026-02-01&endDate=2026-01-01", "sortBy=password&sortOrder=sideways", "banned=maybe&expired=2&used=x&inGrace=%ff",
	"level=LOUD&username=" + strings.Repeat("u", 500),
}

// fixture is what a valid request of each group needs: credentials and real ids.
type fixture struct {
	adminToken, clientToken, clientIP string
	ids                               map[string]string
	appID                             string
}

func (f fixture) valid(param string) string {
	if id, ok := f.ids[param]; ok {
		return id
	}
	return "x"
}

// fillPath puts the fixture's ids in the route's parameters, and bad into the one at bad.
func (f fixture) fillPath(route string, bad int, badValue string) string {
	segs := strings.Split(route, "/")
	n := 0
	for i, s := range segs {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			if n == bad {
				segs[i] = badValue
			} else {
				segs[i] = f.valid(s[1:])
			}
			n++
		}
	}
	return strings.Join(segs, "/")
}

func paramCount(route string) int {
	return strings.Count(route, "/:") + strings.Count(route, "/*")
}

// cases lists the bad inputs that apply to a route.
func (f fixture) cases(r gin.RouteInfo) []badCase {
	key := r.Method + " " + r.Path
	var out []badCase
	withBody := r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH"
	for i := range paramCount(r.Path) {
		names := make([]string, 0, len(badParams))
		for n := range badParams {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			body := ""
			if withBody {
				body = `{}`
			}
			out = append(out, badCase{name: fmt.Sprintf("path param %d %s", i, n), method: r.Method, path: f.fillPath(r.Path, i, badParams[n]), body: body})
		}
	}
	if spoils[key] || r.Method == "DELETE" && strings.HasSuffix(r.Path, "Id") {
		return out // a valid id would really act
	}
	path := f.fillPath(r.Path, -1, "")
	if withBody {
		for _, b := range badBodies {
			out = append(out, badCase{name: "body " + b.name, method: r.Method, path: path, body: b.body, refuse: true})
		}
		out = append(out, badCase{name: "body unknown members", method: r.Method, path: path, body: `{"zzUnknown":{"deep":[1,{"x":null}]},"__proto__":{"admin":true}}`})
	}
	if r.Method == "GET" || r.Method == "DELETE" {
		for _, q := range badQueries {
			out = append(out, badCase{name: "query " + q[:min(len(q), 24)], method: r.Method, path: path + "?" + q})
		}
	}
	return out
}

// badReply is what a reply must be: JSON with the envelope when refused, a request id,
// never 5xx.
func badReply(status int, h http.Header, raw []byte) string {
	if status >= 500 {
		return fmt.Sprintf("status %d", status)
	}
	if h.Get("X-Request-Id") == "" {
		return "no X-Request-Id"
	}
	if status < 400 {
		if status >= 300 {
			return fmt.Sprintf("status %d", status)
		}
		return ""
	}
	var env struct {
		Success *bool
		Error   *struct{ Code, Message string }
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return "refusal not JSON"
	}
	if env.Success == nil || *env.Success || env.Error == nil || env.Error.Code == "" || env.Error.Message == "" {
		return "refusal without the envelope"
	}
	return ""
}

// state is what a refused request must not change: the counts an owner can list.
func (f fixture) state(t *testing.T, s *ts.Server) string {
	t.Helper()
	var b strings.Builder
	base := "/api/apps/" + f.appID
	for _, p := range []string{"/api/apps", base + "/users?limit=100", base + "/licenses?limit=100", base + "/tokens",
		base + "/variables", base + "/rules", base + "/files", base + "/ws/hooks", base + "/integrations", "/api/auth/api-keys", "/api/admin/accounts?limit=100"} {
		r := s.Do(t, ts.Req{Method: "GET", Path: p, Token: f.adminToken})
		fmt.Fprintf(&b, "%s=%d:%s ", p, r.Status, listSize(r.Body["data"]))
	}
	return b.String()
}

// listSize is the size of a list reply: its total, or the length of its array.
func listSize(d any) string {
	switch x := d.(type) {
	case []any:
		return fmt.Sprint(len(x))
	case map[string]any:
		if tot, ok := x["total"]; ok {
			return fmt.Sprint(tot)
		}
		for k, v := range x {
			if a, ok := v.([]any); ok {
				return fmt.Sprintf("%s:%d", k, len(a))
			}
		}
	}
	return "?"
}

func newFixture(t *testing.T, s *ts.Server) fixture {
	t.Helper()
	o := newOwner(t, s)
	role, plan := "admin", "business"
	if _, err := s.Node.Accounts().ChangeAccountByUsername(t.Context(), o.Username, accounts.Change{Role: &role, Plan: &plan}); err != nil {
		t.Fatal(err)
	}
	a := api{t, s, o.Token}
	appID, secret := a.createApp("BadInput")
	f := fixture{adminToken: o.Token, appID: appID, ids: map[string]string{"appId": appID, "accountId": o.ID}}
	r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "walker", "password": "pw-walker-1"})
	expectOK(t, r, http.StatusCreated)
	f.ids["userId"] = r.Data()["id"].(string)
	f.ids["licenseId"], _ = createLicenseRecord(a, appID, nil)
	r = a.do("POST", "/api/apps/"+appID+"/tokens", map[string]any{"count": 1})
	expectOK(t, r, http.StatusCreated)
	if l, ok := r.Data()["tokens"].([]any); ok && len(l) > 0 {
		f.ids["tokenId"], _ = l[0].(map[string]any)["id"].(string)
	}
	f.ids["variableId"] = createVariable(a, appID, "greeting", "hi", "string")
	f.ids["varId"] = f.ids["variableId"]
	r = a.do("POST", "/api/apps/"+appID+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.9"})
	expectOK(t, r, http.StatusCreated)
	f.ids["ruleId"] = r.Data()["id"].(string)
	r = a.do("POST", "/api/apps/"+appID+"/ws/hooks", map[string]any{"name": "h", "event": "level_up", "actions": []any{map[string]any{"type": "respond", "message": "hi"}}})
	expectOK(t, r, http.StatusCreated)
	f.ids["hookId"] = r.Data()["id"].(string)
	f.ids["fileId"], _ = uploadFile(a, appID, "tool", "1.0.0", []byte("payload"))["id"].(string)
	r = a.do("POST", "/api/auth/api-keys", map[string]any{"name": "walker", "scopes": []any{"apps:read"}})
	if r.Status == http.StatusCreated {
		f.ids["keyId"], _ = r.Data()["id"].(string)
	}
	c := newSDK(t, s, secret)
	c.mustInit()
	expectOK(t, c.withNonce("login", map[string]any{"username": "walker", "password": "pw-walker-1", "hwid": "walker-pc"}), http.StatusOK)
	f.clientToken, f.clientIP = c.token, c.ip
	return f
}

// send makes one bad request with the route group's credential.
func (f fixture) send(t *testing.T, s *ts.Server, auth authKind, c badCase) (int, http.Header, []byte) {
	t.Helper()
	body := c.body
	if auth == authClient && strings.HasPrefix(body, "{") && !strings.HasPrefix(body, "{}{") {
		// The session token rides in the body; the rest of the body stays bad.
		inner := strings.TrimPrefix(body, "{")
		sep := ","
		if strings.HasPrefix(strings.TrimSpace(inner), "}") {
			sep = ""
		}
		body = `{"sessionToken":"` + f.clientToken + `"` + sep + inner
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(c.method, s.URL+c.path, rd)
	if err != nil {
		// A path net/http itself cannot send is no case.
		return 0, nil, nil
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch auth {
	case authOwner, authAdmin:
		req.Header.Set("Authorization", "Bearer "+f.adminToken)
	}
	ip := nextIP()
	if auth == authClient {
		ip = f.clientIP
	}
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path[:min(len(c.path), 80)], err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw
}

// TestBadInputEveryRoute walks every route of the router and sends it the bad inputs that
// apply (bad path parameters, bad bodies, bad query parameters) with a valid credential of
// its group: never a 5xx, a request id on every reply, the error envelope on every
// refusal, and no listed count changed by a route whose every case was refused.
func TestBadInputEveryRoute(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		f := newFixture(t, s)
		routes := routesOf(t, s)
		type tally struct{ routes, cases, refused, accepted int }
		groups := map[string]*tally{}
		failures := 0
		var bodiless []string
		// The state before a route is the state after the one before it: nothing else
		// runs between them, and reading it once per route halves the walk's requests.
		before := f.state(t, s)
		for _, r := range routes {
			g := routeGroup(r.Path)
			if groups[g] == nil {
				groups[g] = &tally{}
			}
			groups[g].routes++
			auth := authFor(r.Path)
			changed, readsBody := false, true
			for _, c := range f.cases(r) {
				status, h, raw := f.send(t, s, auth, c)
				if status == 0 {
					continue
				}
				groups[g].cases++
				problem := badReply(status, h, raw)
				if htmlPages[r.Method+" "+r.Path] && strings.HasPrefix(h.Get("Content-Type"), "text/html") && status < 500 && h.Get("X-Request-Id") != "" {
					problem = ""
				}
				if c.name == "body malformed" && status < 400 {
					// Malformed JSON accepted: the route reads no body and ignores it, as
					// HTTP allows; its other body cases are only checked for survival.
					readsBody = false
					bodiless = append(bodiless, r.Method+" "+r.Path)
				}
				// The Client API reads members as their text and ignores the rest (CLIENT-SDKS.md).
				lenient := auth == authClient && c.name == "body wrong member types"
				if problem == "" && c.refuse && readsBody && !lenient && status < 400 {
					problem = fmt.Sprintf("accepted with %d", status)
				}
				if status < 400 {
					t.Logf("accepted %d: %s %s, %s", status, r.Method, r.Path, c.name)
					groups[g].accepted++
					changed = changed || r.Method != "GET"
				} else {
					groups[g].refused++
				}
				if problem != "" && failures < 200 {
					failures++
					t.Errorf("%s %s, %s: %s: %.300s", r.Method, r.Path, c.name, problem, raw)
				}
			}
			after := f.state(t, s)
			if !changed && after != before {
				t.Errorf("%s %s: refused requests changed state:\n before %s\n after  %s", r.Method, r.Path, before, after)
			}
			before = after
		}
		names := make([]string, 0, len(groups))
		total := tally{}
		for g, n := range groups {
			names = append(names, g)
			total.routes += n.routes
			total.cases += n.cases
			total.refused += n.refused
			total.accepted += n.accepted
		}
		sort.Strings(names)
		var b bytes.Buffer
		for _, g := range names {
			n := groups[g]
			fmt.Fprintf(&b, "  %-14s routes %3d  cases %5d  refused %5d  accepted %4d\n", g, n.routes, n.cases, n.refused, n.accepted)
		}
		t.Logf("bad-input walk: %d routes, %d cases (%d refused, %d accepted)\n%s  routes that read no body: %s",
			total.routes, total.cases, total.refused, total.accepted, b.String(), strings.Join(bodiless, ", "))
	})
}

// badFrames are socket frames every channel refuses before looking at the type.
var badFrames = []string{
	`not json`, `[]`, `"ping"`, `42`, `null`, `{}`, `{"type":5}`, `{"type":""}`, `{"type":null}`,
	`{"type":"` + strings.Repeat("x", 60) + `"}`, `{"type":"ping"`, `{"type":"ping"}{"type":"ping"}`,
}

// TestBadInputSocketMessages sends every inbound message type of both channels with bad
// payloads over real sockets: each is answered with an error message and the socket stays
// open (a ping afterwards gets its pong). The service clock moves past the rate window
// between batches so that the rate limit is not what answers.
func TestBadInputSocketMessages(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "frank")
		cl := w.clientSocket(t, s)
		dash := w.openDashboard(t, s)
		long := func(n int) string { return strings.Repeat("a", n) }
		many := map[string]any{}
		for i := range 21 {
			many[fmt.Sprint("k", i)] = i
		}
		var filters []any
		for i := range 101 {
			filters = append(filters, fmt.Sprint("e", i))
		}
		asJSON := func(m map[string]any) string {
			b, _ := json.Marshal(m)
			return string(b)
		}
		client := map[string][]map[string]any{
			"set_status": {{}, {"status": 5}, {"status": ""}, {"status": long(33)}, {"data": map[string]any{"status": []any{}}}},
			"chat":       {{}, {"message": 5}, {"message": long(2001)}, {"message": []any{"x"}}, {"data": "x"}},
			"typing":     {{}, {"typing": "yes"}, {"typing": 1}, {"data": map[string]any{"typing": nil}}},
			"set_metadata": {{}, {"metadata": []any{1}}, {"metadata": "x"}, {"metadata": many}, {"metadata": map[string]any{"k": map[string]any{}}},
				{"metadata": map[string]any{"k": []any{1}}}, {"metadata": map[string]any{"": 1}}, {"metadata": map[string]any{long(65): 1}},
				{"metadata": map[string]any{"k": long(1025)}}},
		}
		dashboard := map[string][]map[string]any{
			"chat":        {{}, {"userId": w.userID}, {"userId": w.userID, "message": 5}, {"message": "hi"}},
			"push_json":   {{"payload": map[string]any{"a": 1}, "userId": 5}, {"userId": w.userID, "payload": "x"}, {"userId": []any{w.userID}, "payload": map[string]any{"a": 1}}},
			"typing":      {{"userId": w.userID}, {"typing": true}, {"userId": w.userID, "typing": "yes"}},
			"kick":        {{}, {"userId": 5}},
			"ban":         {{}, {"userId": "nobody-here"}, {"userId": []any{}}},
			"command":     {{"userId": w.userID}, {"userId": w.userID, "command": 5}, {"userId": w.userID, "command": ""}},
			"set_filters": {{}, {"events": "all"}, {"events": []any{1}}, {"events": filters}},
			"no_such":     {{}},
		}
		sent := 0
		pace := func() {
			// Both channels allow at least 20 messages per 10 s: move on past the window.
			if sent++; sent%15 == 0 {
				s.Clock().Advance(11 * time.Second)
			}
		}
		check := func(c *wsConn, channel, typ, frame string) {
			t.Helper()
			pace()
			t.Logf("%s %s: %.100s", channel, typ, frame)
			if err := c.conn.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
				t.Fatalf("%s %s: write %.80s: %v", channel, typ, frame, err)
			}
			d := c.expectType("error", "session_connect", "session_disconnect", "status", "online_count")
			if msg, _ := d["message"].(string); msg == "" {
				t.Errorf("%s %s %.80s: error without a message: %v", channel, typ, frame, d)
			}
		}
		types := 0
		for _, ch := range []struct {
			name  string
			c     *wsConn
			cases map[string][]map[string]any
		}{{"client", cl, client}, {"dashboard", dash, dashboard}} {
			for _, f := range badFrames {
				check(ch.c, ch.name, "frame", f)
			}
			names := make([]string, 0, len(ch.cases))
			for typ := range ch.cases {
				names = append(names, typ)
			}
			sort.Strings(names)
			for _, typ := range names {
				types++
				for _, m := range ch.cases[typ] {
					m["type"] = typ
					check(ch.c, ch.name, typ, asJSON(m))
				}
			}
			pace()
			ch.c.send(map[string]any{"type": "ping"})
			ch.c.expectType("pong", "session_connect", "session_disconnect", "status", "online_count")
		}
		t.Logf("bad socket messages: %d types with bad payloads plus %d malformed frames on each channel, %d frames in all", types, len(badFrames), sent)
	})
}
