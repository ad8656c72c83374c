package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/keyward/keyward/core/accounts"
	ts "github.com/keyward/keyward/internal/testserver"
)

// describedAPI checks real requests and answers against the description a server serves.
type describedAPI struct {
	t       *testing.T
	s       *ts.Server
	v       validator.Validator
	model   *v3.Document
	checked map[string]bool // "METHOD /route" of the answers checked
}

func newDescribedAPI(t *testing.T, s *ts.Server) *describedAPI {
	t.Helper()
	doc, model := servedDescription(t, s)
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return &describedAPI{t: t, s: s, v: v, model: model, checked: map[string]bool{}}
}

// servedDescription reads the OpenAPI description s serves, as a document and its model.
func servedDescription(t *testing.T, s *ts.Server) (libopenapi.Document, *v3.Document) {
	t.Helper()
	specResp, err := http.Get(s.URL + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(specResp.Body)
	specResp.Body.Close()
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	return doc, &model.Model
}

// check sends r, wants the status, and validates the request (path, query, body) and the
// answer (status, body) against the description.
func (d *describedAPI) check(r ts.Req, want int) ts.Response {
	d.t.Helper()
	resp := d.s.Do(d.t, r)
	if resp.Status != want {
		d.t.Fatalf("%s %s: %d, want %d: %s", r.Method, r.Path, resp.Status, want, resp.Raw)
	}
	var body []byte
	if r.Body != nil {
		body, _ = json.Marshal(r.Body)
	}
	req, _ := http.NewRequest(r.Method, d.s.URL+r.Path, bytes.NewReader(body))
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	if r.APIKey != "" {
		req.Header.Set("X-API-Key", r.APIKey)
	}
	if ok, verrs := d.v.ValidateHttpRequest(req); !ok && resp.Status < 400 {
		d.report("request", r, resp.Status, verrs)
	}
	req, _ = http.NewRequest(r.Method, d.s.URL+r.Path, nil)
	httpResp := &http.Response{StatusCode: resp.Status, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(resp.Raw)), Request: req}
	if ok, verrs := d.v.ValidateHttpResponse(req, httpResp); !ok {
		d.report("answer", r, resp.Status, verrs)
	}
	if item, _, found := paths.FindPath(req, d.model, nil); item != nil {
		d.checked[r.Method+" "+found] = true
	}
	return resp
}

func (d *describedAPI) report(what string, r ts.Req, status int, verrs []*verrors.ValidationError) {
	d.t.Helper()
	for _, e := range verrs {
		d.t.Errorf("%s of %s %s (%d): %s: %s", what, r.Method, r.Path, status, e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			d.t.Errorf("  %s at %s", se.Reason, se.FieldPath)
		}
	}
}

// TestRealResponsesMatchOpenAPI: real answers of a running server, of every kind of
// record, successes and errors, validate against the description the server serves
// (libopenapi-validator), and so do the requests that made them.
func TestRealResponsesMatchOpenAPI(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	d := newDescribedAPI(t, s)
	check := d.check
	o := newOwner(t, s)
	setPlan(t, s, o.Username, "business")
	tok := o.Token
	get := func(path string) ts.Response {
		t.Helper()
		return check(ts.Req{Method: "GET", Path: path, Token: tok}, http.StatusOK)
	}
	call := func(method, path string, body any, want int) ts.Response {
		t.Helper()
		return check(ts.Req{Method: method, Path: path, Token: tok, Body: body}, want)
	}

	check(ts.Req{Method: "GET", Path: "/healthz"}, http.StatusOK)
	check(ts.Req{Method: "GET", Path: "/readyz"}, http.StatusOK)
	check(ts.Req{Method: "GET", Path: "/api/plans"}, http.StatusOK)
	get("/api/auth/me")
	check(ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(), Body: map[string]string{"username": o.Username, "password": o.Password}}, http.StatusOK)
	call("POST", "/api/auth/2fa/setup", nil, http.StatusOK)

	// Applications and their records.
	app := call("POST", "/api/apps", map[string]any{"name": "Described"}, http.StatusCreated)
	appID, appSecret := app.Data()["id"].(string), app.Data()["secret"].(string)
	base := "/api/apps/" + appID
	get("/api/apps")
	get(base)
	call("PATCH", base, map[string]any{"description": "described", "signResponses": false}, http.StatusOK)
	get(base + "/stats")
	call("POST", base+"/signing-key/regenerate", nil, http.StatusOK)

	user := call("POST", base+"/users", map[string]any{"username": "alice", "password": "pw-alice-1", "level": 1}, http.StatusCreated)
	userID := user.Data()["id"].(string)
	get(base + "/users")
	get(base + "/users/" + userID)
	call("PATCH", base+"/users/"+userID, map[string]any{"level": 2, "metadata": map[string]any{"tier": "gold"}}, http.StatusOK)
	call("POST", base+"/users/"+userID+"/extend", map[string]any{"duration": 3600}, http.StatusOK)
	call("POST", base+"/users/"+userID+"/reset-hwid", nil, http.StatusOK)
	call("POST", base+"/users/"+userID+"/kill-sessions", nil, http.StatusOK)

	lic := call("POST", base+"/licenses", map[string]any{"count": 2, "level": 1, "duration": 86400, "maxSeats": 2}, http.StatusCreated)
	lics := lic.Data()["licenses"].([]any)
	licenseID, licenseKey := lics[0].(map[string]any)["id"].(string), lics[0].(map[string]any)["key"].(string)
	get(base + "/licenses")
	get(base + "/licenses/" + licenseID)
	call("PATCH", base+"/licenses/"+licenseID, map[string]any{"note": "described"}, http.StatusOK)
	call("POST", base+"/licenses/verify", map[string]any{"key": licenseKey}, http.StatusOK)
	call("POST", base+"/licenses/"+licenseID+"/file", nil, http.StatusOK)
	get(base + "/licenses/" + licenseID + "/seats")
	call("POST", base+"/licenses/bulk-delete", map[string]any{"ids": []string{lics[1].(map[string]any)["id"].(string)}}, http.StatusOK)

	tk := call("POST", base+"/tokens", map[string]any{"count": 1, "level": 2}, http.StatusCreated)
	tokenID := tk.Data()["tokens"].([]any)[0].(map[string]any)["id"].(string)
	tokenValue := tk.Data()["tokens"].([]any)[0].(map[string]any)["token"].(string)
	get(base + "/tokens")
	call("PATCH", base+"/tokens/"+tokenID, map[string]any{"note": "n"}, http.StatusOK)

	v := call("POST", base+"/variables", map[string]any{"key": "motd", "value": "hello"}, http.StatusCreated)
	call("PATCH", base+"/variables/"+v.Data()["id"].(string), map[string]any{"value": 5}, http.StatusOK)
	call("POST", base+"/variables/bulk", map[string]any{"variables": []any{map[string]any{"key": "a", "value": "1"}}}, http.StatusCreated)
	get(base + "/variables")
	uv := call("POST", base+"/users/"+userID+"/variables", map[string]any{"key": "seat", "value": "7"}, http.StatusCreated)
	call("PATCH", base+"/users/"+userID+"/variables/"+uv.Data()["id"].(string), map[string]any{"value": "8"}, http.StatusOK)
	get(base + "/users/" + userID + "/variables")
	lv := call("POST", base+"/licenses/"+licenseID+"/variables", map[string]any{"key": "edition", "value": "pro"}, http.StatusCreated)
	get(base + "/licenses/" + licenseID + "/variables")
	call("DELETE", base+"/licenses/"+licenseID+"/variables/"+lv.Data()["id"].(string), nil, http.StatusOK)
	gone := call("POST", base+"/variables", map[string]any{"key": "gone", "value": "x"}, http.StatusCreated)
	call("DELETE", base+"/variables/"+gone.Data()["id"].(string), nil, http.StatusOK)

	rule := call("POST", base+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.0/24"}, http.StatusCreated)
	call("PATCH", base+"/rules/"+rule.Data()["id"].(string), map[string]any{"note": "n"}, http.StatusOK)
	call("POST", base+"/rules/bulk", map[string]any{"rules": []any{map[string]any{"type": "hwid", "action": "blacklist", "value": "bad-hwid"}}}, http.StatusCreated)
	get(base + "/rules")

	integ := call("POST", base+"/integrations", map[string]any{"name": "hook", "type": "CUSTOM", "webhookUrl": "https://93.184.215.14/hook", "events": []string{"user.login"}, "enabled": false}, http.StatusCreated)
	integID := integ.Data()["id"].(string)
	get(base + "/integrations")
	get(base + "/integrations/" + integID)
	call("PATCH", base+"/integrations/"+integID, map[string]any{"name": "renamed"}, http.StatusOK) // disabled: nothing leaves the machine
	get(base + "/integrations/" + integID + "/deliveries")
	call("POST", base+"/integrations/"+integID+"/secret/regenerate", nil, http.StatusOK)
	get("/api/integrations/events")

	hook := call("POST", base+"/ws/hooks", map[string]any{"name": "greet", "event": "join_room", "actions": []any{map[string]any{"type": "respond", "message": "hi"}}}, http.StatusCreated)
	call("PATCH", base+"/ws/hooks/"+hook.Data()["id"].(string), map[string]any{"priority": 2}, http.StatusOK)
	get(base + "/ws/hooks")
	get(base + "/ws/online")
	get(base + "/ws/sessions")
	call("POST", base+"/ws/broadcast", map[string]any{"message": "hello"}, http.StatusOK)
	call("POST", base+"/ws/push", map[string]any{"payload": map[string]any{"x": 1}}, http.StatusOK)
	call("POST", base+"/ws/command", map[string]any{"command": "restart"}, http.StatusOK)
	call("POST", base+"/ws/users/"+userID+"/kick", map[string]any{"reason": "r"}, http.StatusOK)

	// The Client API: a program's session.
	ip := nextIP()
	client := func(path string, body map[string]any, nonce bool, want int) ts.Response {
		t.Helper()
		h := map[string]string{}
		if nonce {
			n := check(ts.Req{Method: "POST", Path: "/api/client/nonce", IP: ip, Body: map[string]any{"sessionToken": body["sessionToken"]}}, http.StatusOK)
			h["X-Nonce"] = n.Data()["nonce"].(string)
		}
		return check(ts.Req{Method: "POST", Path: "/api/client/" + path, IP: ip, Body: body, Header: h}, want)
	}
	in := client("init", map[string]any{"secret": appSecret, "version": "1.0.0", "hwid": "hw-1"}, false, http.StatusOK)
	st := in.Data()["sessionToken"].(string)
	with := func(m map[string]any) map[string]any { m["sessionToken"] = st; return m }
	client("login", with(map[string]any{"username": "alice", "password": "pw-alice-1", "hwid": "hw-1"}), true, http.StatusOK)
	client("activate", with(map[string]any{"licenseKey": licenseKey}), true, http.StatusOK)
	client("heartbeat", with(map[string]any{}), true, http.StatusOK)
	client("check", with(map[string]any{}), false, http.StatusOK)
	client("check-license", with(map[string]any{"licenseKey": licenseKey}), false, http.StatusOK)
	client("user", with(map[string]any{}), false, http.StatusOK)
	client("variables", with(map[string]any{}), false, http.StatusOK)
	client("variable", with(map[string]any{"key": "motd"}), false, http.StatusOK)
	client("user-variables", with(map[string]any{}), false, http.StatusOK)
	client("set-user-variable", with(map[string]any{"key": "color", "value": "blue"}), false, http.StatusOK)
	client("license-variables", with(map[string]any{}), false, http.StatusOK)
	client("log", with(map[string]any{"event": "opened", "message": "hi"}), false, http.StatusOK)
	client("token", with(map[string]any{"token": tokenValue}), false, http.StatusOK)
	client("check-update", with(map[string]any{"currentVersion": "1.0.0"}), false, http.StatusOK)
	client("license-file", with(map[string]any{}), false, http.StatusOK)
	client("variable", with(map[string]any{"key": "nope"}), false, http.StatusNotFound)
	client("login", with(map[string]any{"username": "alice", "password": "wrong-pw-1"}), true, http.StatusUnauthorized)
	client("login", with(map[string]any{"username": "alice", "password": "pw-alice-1"}), false, http.StatusUnauthorized) // no nonce
	client("end", with(map[string]any{}), false, http.StatusOK)
	client("heartbeat", with(map[string]any{}), false, http.StatusUnauthorized)

	// Logs and analytics, after the program's calls.
	get(base + "/logs")
	get(base + "/logs/stats")
	get(base + "/logs/events")
	if devices := get(base + "/devices").Data()["devices"].([]any); len(devices) > 0 {
		call("DELETE", base+"/devices/"+devices[0].(map[string]any)["id"].(string), nil, http.StatusOK)
	}
	call("DELETE", base+"/devices/nope", nil, http.StatusNotFound)
	for _, p := range []string{"overview", "timeseries", "geography", "recent"} {
		get(base + "/analytics/" + p)
	}

	// API keys and the audit log.
	k := call("POST", "/api/auth/api-keys", map[string]any{"name": "k", "scopes": []string{"read"}}, http.StatusCreated)
	keyID := k.Data()["id"].(string)
	get("/api/auth/api-keys")
	call("PATCH", "/api/auth/api-keys/"+keyID, map[string]any{"name": "renamed"}, http.StatusOK)
	check(ts.Req{Method: "GET", Path: base + "/users", APIKey: k.Data()["key"].(string)}, http.StatusOK)
	get("/api/audit")

	// Administrators.
	role := "admin"
	if _, err := s.Node.Accounts().ChangeAccountByUsername(t.Context(), o.Username, accounts.Change{Role: &role}); err != nil {
		t.Fatal(err)
	}
	get("/api/admin/accounts")
	get("/api/admin/audit?accountId=" + o.ID)
	get(base + "/users/" + userID + "/ip")
	get(base + "/licenses/" + licenseID + "/user")
	call("PATCH", "/api/admin/accounts/"+o.ID, map[string]any{"plan": "business"}, http.StatusOK)
	call("POST", "/api/auth/api-key/regenerate", nil, http.StatusOK)

	// Errors: the envelope of the error schema, with the statuses described.
	check(ts.Req{Method: "POST", Path: base + "/licenses", APIKey: k.Data()["key"].(string), Body: map[string]any{"count": 1}}, http.StatusForbidden)
	call("POST", "/api/auth/api-keys", map[string]any{"name": ""}, http.StatusBadRequest)
	call("DELETE", "/api/auth/api-keys/nope", nil, http.StatusNotFound)
	call("POST", base+"/users", map[string]any{"username": "alice", "password": "pw-alice-2"}, http.StatusConflict)
	check(ts.Req{Method: "GET", Path: "/api/auth/me"}, http.StatusUnauthorized)
	call("GET", base+"/licenses/nope", nil, http.StatusNotFound)

	// And the deletions.
	call("DELETE", "/api/auth/api-keys/"+keyID, nil, http.StatusOK)
	call("DELETE", base+"/tokens/"+tokenID, nil, http.StatusOK)
	call("DELETE", base+"/rules/"+rule.Data()["id"].(string), nil, http.StatusOK)
	call("DELETE", base+"/integrations/"+integID, nil, http.StatusOK)
	call("DELETE", base+"/ws/hooks/"+hook.Data()["id"].(string), nil, http.StatusOK)
	call("DELETE", base+"/licenses/"+licenseID, nil, http.StatusOK)
	call("DELETE", base+"/users/"+userID, nil, http.StatusOK)
	call("DELETE", base+"/logs?days=1", nil, http.StatusOK)
	call("DELETE", base, map[string]any{"confirm": true}, http.StatusOK)
	call("POST", "/api/auth/logout", nil, http.StatusOK)
	t.Logf("%d operations answered and checked against the description", len(d.checked))

	// The reference page and its script come from the binary and load nothing else.
	for _, p := range []string{"/api/docs", "/api/docs/app.js"} {
		resp, err := http.Get(s.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) < 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		if strings.Contains(string(body), "http://") || strings.Contains(string(body), "https://") {
			t.Errorf("%s refers to another host", p)
		}
	}
}

// TestRealSocketMessagesMatchOpenAPI: the messages both sockets receive validate against
// the WebSocket message schemas of the served description (WSClientOut, WSDashboardOut).
func TestRealSocketMessagesMatchOpenAPI(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	_, model := servedDescription(t, s)
	sv := schema_validation.NewSchemaValidator()
	// expect reads c's messages, each validated against the schema, until every type of
	// want was seen (bounded by the read deadline).
	expect := func(c *wsConn, schema string, want ...string) {
		t.Helper()
		proxy, found := model.Components.Schemas.Get(schema)
		if !found {
			t.Fatalf("no schema %s", schema)
		}
		missing := map[string]bool{}
		for _, w := range want {
			missing[w] = true
		}
		for len(missing) > 0 {
			_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, msg, err := c.conn.ReadMessage()
			if err != nil {
				t.Fatalf("%s: still waiting for %v: %v", schema, missing, err)
			}
			if ok, verrs := sv.ValidateSchemaBytes(proxy.Schema(), msg); !ok {
				for _, e := range verrs {
					t.Errorf("%s does not describe %s: %s %v", schema, msg, e.Reason, e.SchemaValidationErrors)
				}
			}
			var m struct{ Type string }
			_ = json.Unmarshal(msg, &m)
			delete(missing, m.Type)
		}
	}
	w := newWSApp(t, s, "olga")
	base := "/api/apps/" + w.appID
	cl := w.clientSocket(t, s)
	dash := w.dashboard(t, s)
	expect(dash, "WSDashboardOut", "online_count", "sessions")

	cl.send(map[string]any{"type": "chat", "message": "hi"})
	cl.send(map[string]any{"type": "set_status", "status": "busy"})
	cl.send(map[string]any{"type": "typing", "typing": true})
	cl.send(map[string]any{"type": "level_up", "data": map[string]any{"level": 2}})
	dash.send(map[string]any{"type": "get_online"})
	dash.send(map[string]any{"type": "bogus"})
	dash.send(map[string]any{"type": "ping"})
	expect(dash, "WSDashboardOut", "chat", "status", "typing", "custom_event", "online_count", "error", "pong")

	dash.send(map[string]any{"type": "chat", "userId": w.userID, "message": "hello"})
	dash.send(map[string]any{"type": "typing", "userId": w.userID, "typing": true})
	dash.send(map[string]any{"type": "push_json", "userId": w.userID, "payload": map[string]any{"x": 1}})
	dash.send(map[string]any{"type": "command", "command": "restart"})
	expectOK(t, w.a.do("POST", base+"/ws/broadcast", map[string]any{"message": "maintenance", "type": "warning"}), http.StatusOK)
	expectOK(t, w.a.do("POST", base+"/variables", map[string]any{"key": "motd", "value": "hi"}), http.StatusCreated)
	expectOK(t, w.a.do("POST", base+"/users/"+w.userID+"/variables", map[string]any{"key": "seat", "value": "7"}), http.StatusCreated)
	cl.send(map[string]any{"type": "set_metadata", "metadata": 5})
	cl.send(map[string]any{"type": "ping"})
	expect(cl, "WSClientOut", "chat", "typing", "custom", "command", "message", "variable_update", "user_variable_update", "error", "pong")

	dash.send(map[string]any{"type": "kick", "userId": w.userID, "reason": "bye"})
	expect(cl, "WSClientOut", "force_logout")
	expect(dash, "WSDashboardOut", "session_disconnect")
}
