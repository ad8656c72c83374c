package httpapi

import (
	"encoding/json"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/hooks"
	"github.com/keyward/keyward/pkg/licensefile"
)

// The record schemas of the description are reflected from the view types the handlers
// answer (so a member added to a view is described at once), the request bodies and the
// small gin.H answers are written here. A view member is required unless it is omitempty,
// and a pointer without omitempty is nullable: the rules encoding/json follows.

// viewComponents names the view types that become component schemas.
var viewComponents = []struct {
	name string
	v    any
}{
	{"App", appView{}}, {"AppCounts", appCountsView{}}, {"PublicKey", publicKeyView{}},
	{"User", userView{}}, {"License", licenseView{}}, {"Device", deviceView{}}, {"Token", tokenView{}},
	{"Variable", variableView{}}, {"Rule", ruleView{}}, {"LogEntry", logView{}}, {"File", fileView{}},
	{"Integration", integrationView{}}, {"DeliveryAttempt", attemptView{}},
	{"WSHook", wsHookView{}}, {"HookCondition", hooks.Condition{}}, {"HookAction", hooks.Action{}},
	{"APIKey", apiKeyView{}}, {"Account", accountView{}}, {"AccountSummary", accountSummary{}}, {"Session", sessionView{}},
	{"Plan", plans.Plan{}}, {"PlanLimits", plans.Limits{}}, {"Seat", seatView{}},
	{"LicenseFile", licenseFileView{}}, {"LicenseFilePayload", licensefile.Payload{}},
	{"SocketSession", realtime.SessionInfo{}},
	{"ClientInit", initView{}}, {"ClientInitApp", initAppView{}}, {"ClientUser", clientUserView{}},
	{"ClientVariable", clientVariableView{}}, {"LicenseCheck", licenseCheckView{}}, {"LicenseBrief", licenseBriefView{}},
	{"UpdateFile", updateFileView{}},
}

// reflector turns Go types into JSON schemas, with named types as references.
type reflector struct {
	names map[reflect.Type]string
	comps obj
}

func newReflector() *reflector {
	r := &reflector{names: map[reflect.Type]string{}, comps: obj{}}
	for _, c := range viewComponents {
		r.names[reflect.TypeOf(c.v)] = c.name
	}
	for _, c := range viewComponents {
		t := reflect.TypeOf(c.v)
		s := r.object(t)
		s["examples"] = []any{exampleOf(t)}
		r.comps[c.name] = s
	}
	return r
}

var (
	rawMessageType = reflect.TypeOf(json.RawMessage{})
	timeType       = reflect.TypeOf(time.Time{})
)

// schema answers the schema of a value of type t.
func (r *reflector) schema(t reflect.Type) obj {
	if name, found := r.names[t]; found {
		return ref(name)
	}
	switch {
	case t == rawMessageType:
		return obj{}
	case t == timeType:
		return obj{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(r.schema(t.Elem()))
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return obj{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return obj{"type": "number"}
	case reflect.Slice, reflect.Array:
		return obj{"type": "array", "items": r.schema(t.Elem())}
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": r.schema(t.Elem())}
	case reflect.Struct:
		return r.object(t)
	}
	return obj{} // interfaces: any JSON value
}

// object describes a struct: its JSON members, required unless omitempty; an omitempty
// pointer is absent rather than null.
func (r *reflector) object(t reflect.Type) obj {
	props, required := obj{}, []string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if f.Anonymous && tag == "" {
				walk(f.Type)
				continue
			}
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" {
				name = f.Name
			}
			omit := strings.Contains(opts, "omitempty")
			ft := f.Type
			if omit && ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			props[name] = r.schema(ft)
			if !omit {
				required = append(required, name)
			}
		}
	}
	walk(t)
	return obj{"type": "object", "properties": props, "required": required}
}

// nullable lets s be null as well.
func nullable(s obj) obj {
	if typ, isStr := s["type"].(string); isStr && len(s) <= 2 {
		out := obj{}
		for k, v := range s {
			out[k] = v
		}
		out["type"] = []string{typ, "null"}
		return out
	}
	return obj{"anyOf": []any{s, obj{"type": "null"}}}
}

// exampleOf is a value of t with every member filled, as encoding/json writes it.
func exampleOf(t reflect.Type) any {
	v := reflect.New(t).Elem()
	fill(v, "", 0)
	b, _ := json.Marshal(v.Interface())
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// sampleText is an example string for a member named name.
func sampleText(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(name, "At") || n == "since" || n == "checkinby":
		return "2026-05-01T10:00:00.000Z"
	case n == "id" || strings.HasSuffix(name, "Id"):
		return "5f0c6c1e-2d7e-4a57-9b0e-0b7f3f1f2b11"
	case n == "ip" || strings.HasSuffix(name, "Ip") || n == "ipaddress":
		return "203.0.113.9"
	case n == "" || n == "value":
		return "value"
	}
	return "example " + name
}

func fill(v reflect.Value, name string, depth int) {
	if depth > 4 {
		return
	}
	if v.Type() == rawMessageType {
		v.SetBytes([]byte(`{}`))
		return
	}
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(sampleText(name))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), name, depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), name, depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, "key", depth+1)
		if e.Kind() == reflect.Interface {
			e.Set(reflect.ValueOf("value"))
		} else {
			fill(e, "value", depth+1)
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() {
				member, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if member == "" {
					member = f.Name
				}
				fill(v.Field(i), member, depth+1)
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf("value"))
	}
}

var queryList = regexp.MustCompile(`\(.*query: ([A-Za-z, ]+)\)`)

// queryParams are the query members an operation's summary names ("(query: a, b)").
func queryParams(summary string) []any {
	m := queryList.FindStringSubmatch(summary)
	if m == nil {
		return nil
	}
	var out []any
	for _, name := range strings.Split(m[1], ", ") {
		schema := obj{"type": "string"}
		switch name {
		case "limit", "offset", "days", "hours":
			schema = obj{"type": "integer", "minimum": 0}
		case "from", "to", "startDate", "endDate":
			schema = obj{"type": "string", "description": "RFC 3339 time"}
		}
		out = append(out, obj{"name": name, "in": "query", "required": false, "schema": schema})
	}
	return out
}

// props builds an object schema from "name:type" words. A "!" after the name makes the
// member required. Types: string, integer, number, boolean, object, any, scalar (a
// string, number or boolean, as the Client API reads its members), strings (an array of
// strings), date (RFC 3339 text), or a component name; "[]" after a type makes an array
// of it, "?" lets it be null.
func props(words ...string) obj {
	p, required := obj{}, []string{}
	for _, w := range words {
		name, typ, _ := strings.Cut(w, ":")
		if n, isReq := strings.CutSuffix(name, "!"); isReq {
			name = n
			required = append(required, name)
		}
		p[name] = typeOf(typ)
	}
	return obj{"type": "object", "properties": p, "required": required}
}

func typeOf(typ string) obj {
	if base, isNullable := strings.CutSuffix(typ, "?"); isNullable {
		return nullable(typeOf(base))
	}
	if elem, isList := strings.CutSuffix(typ, "[]"); isList {
		return obj{"type": "array", "items": typeOf(elem)}
	}
	switch typ {
	case "string", "integer", "number", "boolean":
		return obj{"type": typ}
	case "object":
		return obj{"type": "object"}
	case "any":
		return obj{}
	case "scalar":
		return obj{"type": []string{"string", "number", "boolean"}}
	case "strings":
		return obj{"type": "array", "items": obj{"type": "string"}}
	case "date":
		return obj{"type": "string", "description": "RFC 3339 time"}
	}
	return ref(typ)
}

// members describes an object whose members are all required.
func members(m obj) obj {
	required := make([]string, 0, len(m))
	for k := range m {
		required = append(required, k)
	}
	sort.Strings(required)
	return obj{"type": "object", "properties": m, "required": required}
}

// clientReq describes a Client API body: the session token, then the route's members.
func clientReq(words ...string) obj {
	return props(append([]string{"sessionToken:string"}, words...)...)
}

// pageSchema describes a page of a list under name.
func pageSchema(name, item string) obj {
	return props(name+"!:"+item+"[]", "total!:integer", "limit!:integer", "offset!:integer")
}

// batch describes records made in one call.
func batch(name, item string) obj { return props(name+"!:"+item+"[]", "count!:integer") }

func list(item string) obj { return typeOf(item + "[]") }

// op is an operation's detail: a summary, its body, and its data.
func op(summary string, body, data obj) opSchema {
	return opSchema{summary: summary, body: body, data: data}
}

var (
	msgData = ref("Message")
	sentTo  = props("sent!:boolean", "userId!:string")
	count   = props("count!:integer")
	deleted = props("deleted!:integer")
	secret  = props("secret!:string")
	reason  = props("reason:string")
	varBody = props("key:string", "value:any", "type:string")
	noBody  obj
)

// operationSchemas are the operations' bodies and answers, by "METHOD /route" (PUT reads
// PATCH's). Every route of the router has one; a test keeps it so.
var operationSchemas = withVariableRoutes(map[string]opSchema{
	"GET /healthz":          op("Liveness", noBody, props("status!:string")),
	"GET /readyz":           op("Readiness: each engine's state", noBody, obj{"type": "object", "additionalProperties": obj{"enum": []string{"ok", "unavailable"}}}),
	"GET /metrics":          op("Prometheus metrics", noBody, nil),
	"GET /api/openapi.json": op("This description", noBody, nil),
	"GET /api/docs":         op("The browsable reference", noBody, nil),
	"GET /api/docs/app.js":  op("The reference page's script", noBody, nil),
	"GET /api/plans":        op("The plans", noBody, list("Plan")),

	"POST /api/auth/register": {summary: "Create an account (a verification mail follows)", body: props("email!:string", "username!:string", "password!:string"),
		status: 202, data: props("message!:string", "requireVerify!:boolean")},
	"POST /api/auth/login":               op("Sign in (answers requires2FA when a code is needed)", props("username!:string", "password!:string", "twoFactorCode:string"), ref("Session")),
	"POST /api/auth/verify-email":        op("Verify the email and sign in", props("token!:string"), props("message!:string", "token!:string", "account!:AccountSummary", "expiresAt:string")),
	"POST /api/auth/resend-verification": op("Mail the verification link again", props("email!:string"), msgData),
	"POST /api/auth/forgot-password":     op("Mail a password reset link", props("email!:string"), msgData),
	"POST /api/auth/reset-password":      op("Set a new password with the mailed token", props("token!:string", "newPassword!:string"), msgData),
	"POST /api/auth/reset-password-2fa":  op("Set a new password with a 2FA code", props("username!:string", "twoFactorCode!:string", "newPassword!:string"), msgData),
	"GET /api/auth/me":                   op("The signed-in account", noBody, ref("Account")),
	"GET /api/auth/mail-outbox":          op("The folder this server writes its mails to when no SMTP server is set (empty otherwise)", noBody, props("outbox!:string")),
	"POST /api/auth/change-password": op("Change the password (every other session ends; a new token is answered)",
		props("currentPassword!:string", "newPassword!:string", "twoFactorCode:string"), props("message!:string", "token!:string", "expiresAt:string")),
	"POST /api/auth/logout":             op("End this session", noBody, msgData),
	"POST /api/auth/api-key/regenerate": op("Replace the account key (shown once)", noBody, props("apiKey!:string")),
	"POST /api/auth/2fa/setup":          op("Start 2FA: a TOTP secret", noBody, props("secret!:string", "otpauth!:string")),
	"POST /api/auth/2fa/enable":         op("Enable 2FA with a first code", props("code!:string"), msgData),
	"POST /api/auth/2fa/disable":        op("Disable 2FA", props("password!:string", "code!:string"), msgData),
	"POST /api/auth/plan":               op("Choose a plan", props("plan!:string"), ref("Account")),
	"GET /api/auth/api-keys":            op("List scoped API keys (masked)", noBody, list("APIKey")),
	"POST /api/auth/api-keys":           {summary: "Create a scoped API key (the full key is shown once)", body: ref("APIKeyInput"), status: 201, data: ref("APIKeyCreated")},
	"PATCH /api/auth/api-keys/:keyId":   op("Change a scoped API key", ref("APIKeyInput"), ref("APIKey")),
	"DELETE /api/auth/api-keys/:keyId":  op("Revoke a scoped API key", noBody, msgData),

	"GET /api/admin/accounts":              op("Accounts (administrators; query: search, limit, offset)", noBody, pageSchema("accounts", "Account")),
	"PATCH /api/admin/accounts/:accountId": op("Change an account's plan or role (administrators)", props("plan:string", "role:string"), ref("Account")),
	"GET /api/admin/audit":                 op("Any account's audit log (administrators; query: accountId, appId, actorId, recordType, from, to, limit, offset)", noBody, ref("AuditPage")),
	"GET /api/audit":                       op("The account's audit log (query: appId, actorId, recordType, from, to, limit, offset)", noBody, ref("AuditPage")),

	"GET /api/apps":        op("The account's applications", noBody, list("App")),
	"POST /api/apps":       {summary: "Create an application (the full secret is shown once)", body: props("name!:string", "description:string", "version:string"), status: 201, data: ref("App")},
	"GET /api/apps/:appId": op("An application (with its public key)", noBody, ref("App")),
	"PATCH /api/apps/:appId": op("Change an application", props("name:string", "description:string", "version:string", "enabled:boolean", "paused:boolean",
		"antiDebug:boolean", "antiVM:boolean", "lockHwid:boolean", "lockIp:boolean", "lockPcName:boolean", "sessionTimeout:integer",
		"fileEncryption:boolean", "signResponses:boolean", "graceSeconds:integer", "licenseFileDays:integer"), ref("App")),
	"DELETE /api/apps/:appId":                      op("Delete an application and all its data", props("confirm!:boolean"), msgData),
	"POST /api/apps/:appId/secret/regenerate":      op("Replace the application secret (shown once)", noBody, secret),
	"POST /api/apps/:appId/signing-key/regenerate": op("Replace the signing key pair", noBody, ref("App")),
	"GET /api/apps/:appId/stats": op("Counts of the application", noBody, members(obj{
		"users": props("total!:integer", "active!:integer", "banned!:integer"), "licenses": props("total!:integer", "used!:integer", "unused!:integer"),
		"sessions": props("active!:integer"), "logins": props("today!:integer", "thisWeek!:integer")})),
	"GET /api/apps/:appId/users":                        op("Users (query: search, sortBy, sortOrder, banned, expired, inGrace, limit, offset)", noBody, pageSchema("users", "User")),
	"POST /api/apps/:appId/users":                       {summary: "Create a user", body: props("username!:string", "password!:string", "email:string", "level:integer", "expiresAt:date", "deviceLimit:integer", "metadata:object"), status: 201, data: ref("User")},
	"GET /api/apps/:appId/users/:userId":                op("A user with devices and subscriptions", noBody, ref("User")),
	"PATCH /api/apps/:appId/users/:userId":              op("Change a user", userPatch, ref("User")),
	"DELETE /api/apps/:appId/users/:userId":             op("Delete a user", noBody, msgData),
	"POST /api/apps/:appId/users/:userId/kill-sessions": op("End every client session of a user", noBody, deleted),
	"POST /api/apps/:appId/users/:userId/reset-hwid":    op("Reset a user's hardware binding", noBody, props("message!:string", "devicesRemoved!:integer", "hwidResets!:integer")),
	"POST /api/apps/:appId/users/:userId/extend":        op("Extend a user's subscription by duration seconds", props("duration!:integer"), ref("User")),
	"GET /api/apps/:appId/users/:userId/ip":             op("A user's IP addresses (administrators)", noBody, props("lastLoginIp!:string", "lockedIp!:string")),

	"GET /api/apps/:appId/licenses": op("Licenses (query: search, sortBy, sortOrder, used, banned, expired, limit, offset)", noBody, pageSchema("licenses", "License")),
	"POST /api/apps/:appId/licenses": {summary: "Create licenses", body: props("count:integer", "level:integer", "maxUses:integer", "duration:integer",
		"expiresAt:date", "prefix:string", "note:string", "maxSeats:integer"), status: 201, data: batch("licenses", "License")},
	"POST /api/apps/:appId/licenses/verify":      op("Find a license by its key", props("key!:string"), ref("License")),
	"POST /api/apps/:appId/licenses/bulk-delete": op("Delete licenses by id or by filter (used, unused, expired, banned, all)", props("ids:strings", "filter:string"), deleted),
	"GET /api/apps/:appId/licenses/:licenseId":   op("A license", noBody, ref("License")),
	"PATCH /api/apps/:appId/licenses/:licenseId": op("Change a license", props("level:integer", "maxUses:integer", "duration:integer", "deviceLimit:integer",
		"maxSeats:integer", "displayName:string", "note:string", "discordId:string", "enabled:boolean", "banned:boolean"), ref("License")),
	"DELETE /api/apps/:appId/licenses/:licenseId":               op("Delete a license", noBody, msgData),
	"GET /api/apps/:appId/licenses/:licenseId/user":             op("The user of a license (administrators)", noBody, props("username!:string", "lastLoginIp!:string", "lockedIp!:string", "hwid!:string", "pcName!:string")),
	"POST /api/apps/:appId/licenses/:licenseId/file":            op("Issue a signed offline license file", noBody, ref("LicenseFile")),
	"GET /api/apps/:appId/licenses/:licenseId/seats":            op("The seats in use of a floating license", noBody, props("maxSeats!:integer", "inUse!:integer", "seats!:Seat[]")),
	"DELETE /api/apps/:appId/licenses/:licenseId/seats/:seatId": op("Free a seat (ends that session)", noBody, msgData),

	"GET /api/apps/:appId/devices":              op("Devices (query: search, limit, offset)", noBody, pageSchema("devices", "Device")),
	"DELETE /api/apps/:appId/devices/:deviceId": op("Forget a device", noBody, msgData),
	"GET /api/apps/:appId/tokens":               op("Tokens (query: limit, offset)", noBody, pageSchema("tokens", "Token")),
	"POST /api/apps/:appId/tokens":              {summary: "Create tokens", body: props("count:integer", "maxUses:integer", "expiresAt:date", "note:string", "level:integer"), status: 201, data: batch("tokens", "Token")},
	"PATCH /api/apps/:appId/tokens/:tokenId":    op("Change a token", props("maxUses:integer", "note:string", "enabled:boolean", "level:integer"), ref("Token")),
	"DELETE /api/apps/:appId/tokens/:tokenId":   op("Delete a token", noBody, msgData),

	"POST /api/apps/:appId/variables/bulk":  {summary: "Create or replace many application variables", body: props("variables!:VariableInput[]"), status: 201, data: batch("variables", "Variable")},
	"GET /api/apps/:appId/rules":            op("Access rules (query: type, action)", noBody, list("Rule")),
	"POST /api/apps/:appId/rules":           {summary: "Create an access rule", body: ref("RuleInput"), status: 201, data: ref("Rule")},
	"POST /api/apps/:appId/rules/bulk":      {summary: "Create many access rules", body: props("rules!:RuleInput[]"), status: 201, data: batch("rules", "Rule")},
	"PATCH /api/apps/:appId/rules/:ruleId":  op("Change an access rule", props("value:string", "note:string", "enabled:boolean"), ref("Rule")),
	"DELETE /api/apps/:appId/rules/:ruleId": op("Delete an access rule", noBody, msgData),
	"GET /api/apps/:appId/logs":             op("Logs (query: event, level, username, startDate, endDate, limit, offset)", noBody, pageSchema("logs", "LogEntry")),
	"DELETE /api/apps/:appId/logs":          op("Purge logs older than some days (query: days)", noBody, deleted),
	"GET /api/apps/:appId/logs/stats":       op("Log counts by level and event (query: hours)", noBody, obj{"type": "object", "required": []string{"total", "byLevel", "byEvent"}, "properties": obj{"total": obj{"type": "integer"}, "byLevel": obj{"type": "object", "additionalProperties": obj{"type": "integer"}}, "byEvent": obj{"type": "object", "additionalProperties": obj{"type": "integer"}}}}),
	"GET /api/apps/:appId/logs/events":      op("The event names seen", noBody, typeOf("strings")),
	"GET /api/apps/:appId/analytics/overview": op("Analytics overview (query: period)", noBody, members(obj{"period": typeOf("string"),
		"users": props("total!:integer", "new!:integer", "active!:integer", "banned!:integer"), "licenses": props("total!:integer", "unused!:integer"),
		"sessions": props("active!:integer"), "activity": props("logins!:integer", "failedLogins!:integer", "registrations!:integer")})),
	"GET /api/apps/:appId/analytics/timeseries": op("Event counts per bucket (query: period, event)", noBody, typeOf("AnalyticsPoint[]")),
	"GET /api/apps/:appId/analytics/geography":  op("Logins by country (query: days)", noBody, typeOf("CountryCount[]")),
	"GET /api/apps/:appId/analytics/recent":     op("Recent events (query: limit)", noBody, typeOf("RecentEvent[]")),

	"GET /api/apps/:appId/files":                  op("Files", noBody, list("File")),
	"POST /api/apps/:appId/files":                 {summary: "Upload a file (multipart: file, name, version)", status: 201, data: ref("File")},
	"PATCH /api/apps/:appId/files/:fileId":        op("Rename or re-version a file", props("name:string", "version:string"), ref("File")),
	"DELETE /api/apps/:appId/files/:fileId":       op("Delete a file", noBody, msgData),
	"GET /api/apps/:appId/files/:fileId/download": op("Download a file's bytes", noBody, nil),

	"GET /api/integrations/events":      op("The event names integrations subscribe to", noBody, typeOf("strings")),
	"GET /api/apps/:appId/integrations": op("Integrations", noBody, list("Integration")),
	"POST /api/apps/:appId/integrations": {summary: "Create an integration (a CUSTOM one's secret is shown once)",
		body: props("name!:string", "type!:string", "webhookUrl!:string", "events:strings", "enabled:boolean"), status: 201, data: ref("Integration")},
	"GET /api/apps/:appId/integrations/:integrationId":    op("An integration", noBody, ref("Integration")),
	"PATCH /api/apps/:appId/integrations/:integrationId":  op("Change an integration", props("name:string", "webhookUrl:string", "events:strings", "enabled:boolean"), ref("Integration")),
	"DELETE /api/apps/:appId/integrations/:integrationId": op("Delete an integration", noBody, msgData),
	"POST /api/apps/:appId/integrations/:integrationId/test": op("Send a test delivery", noBody,
		props("message!:string", "delivered!:boolean", "statusCode!:integer", "latencyMs!:integer", "error:string")),
	"POST /api/apps/:appId/integrations/:integrationId/secret/regenerate": op("Replace the signing secret (shown once)", noBody, secret),
	"GET /api/apps/:appId/integrations/:integrationId/deliveries":         op("Delivery attempts (query: limit, offset)", noBody, pageSchema("attempts", "DeliveryAttempt")),

	"GET /api/apps/:appId/ws/connect":                     op("The owner's dashboard socket (WebSocket)", noBody, nil),
	"GET /api/apps/:appId/ws/online":                      op("Users online", noBody, count),
	"GET /api/apps/:appId/ws/sessions":                    op("Sockets online", noBody, props("count!:integer", "sessions!:SocketSession[]")),
	"POST /api/apps/:appId/ws/broadcast":                  op("Broadcast a message to every socket", props("message!:string", "type:string"), props("sent!:boolean", "onlineUsers!:integer")),
	"POST /api/apps/:appId/ws/chat":                       op("Send a chat message to a user", props("userId!:string", "message!:string"), props("sent!:boolean")),
	"POST /api/apps/:appId/ws/command":                    op("Send a command (to a user, or to every socket)", props("command!:string", "userId:string", "payload:object"), props("sent!:boolean", "recipients!:integer")),
	"POST /api/apps/:appId/ws/push":                       op("Push JSON (to a user, or to every socket)", props("payload!:object", "userId:string"), props("sent!:boolean", "recipients!:integer")),
	"POST /api/apps/:appId/ws/users/:userId/force-logout": op("Force a user's sockets to log out", reason, sentTo),
	"POST /api/apps/:appId/ws/users/:userId/kick":         op("Close a user's sockets", reason, sentTo),
	"POST /api/apps/:appId/ws/users/:userId/ban":          op("Ban a user and close their sockets", reason, props("banned!:boolean", "userId!:string")),
	"GET /api/apps/:appId/ws/hooks":                       op("Socket hooks", noBody, props("count!:integer", "hooks!:WSHook[]")),
	"POST /api/apps/:appId/ws/hooks":                      {summary: "Create a socket hook", body: props("name!:string", "event!:string", "description:string", "conditions:HookCondition[]", "actions!:HookAction[]", "enabled:boolean", "priority:integer"), status: 201, data: ref("WSHook")},
	"PATCH /api/apps/:appId/ws/hooks/:hookId":             op("Change a socket hook", props("name:string", "event:string", "description:string", "conditions:HookCondition[]", "actions:HookAction[]", "enabled:boolean", "priority:integer"), ref("WSHook")),
	"DELETE /api/apps/:appId/ws/hooks/:hookId":            op("Delete a socket hook", noBody, msgData),

	// The Client API (SPEC 5, CLIENT-SDKS.md): members are read as text, so numbers and
	// booleans are accepted where strings are meant.
	"GET /api/client/ws":                   op("The program's socket (WebSocket)", noBody, nil),
	"GET /api/client/confirm-reset/:token": op("Confirm a mailed HWID/IP reset (an HTML page)", noBody, nil),
	"POST /api/client/init":                op("Open a session", props("secret!:scalar", "version:scalar", "hwid:scalar"), ref("ClientInit")),
	"POST /api/client/nonce":               op("A nonce for the next call (X-Nonce)", clientReq(), props("nonce!:string")),
	"POST /api/client/login":               op("Sign a user in", clientReq("username!:scalar", "password!:scalar", "licenseKey:scalar", "hwid:scalar", "pcName:scalar"), ref("ClientUser")),
	"POST /api/client/register": op("Register a user with a license key", clientReq("username!:scalar", "password!:scalar", "email:scalar",
		"displayName:scalar", "licenseKey:scalar", "hwid:scalar", "pcName:scalar"), ref("ClientUser")),
	"POST /api/client/license":              op("Sign in with a license key alone", clientReq("licenseKey!:scalar", "hwid:scalar", "pcName:scalar"), ref("ClientUser")),
	"POST /api/client/activate":             op("Activate a license on the signed-in user", clientReq("licenseKey!:scalar"), props("level!:integer", "username!:string", "licenseActivated!:boolean", "expiresAt:string")),
	"POST /api/client/heartbeat":            op("Keep the session alive", clientReq(), props("expiresAt!:string")),
	"POST /api/client/check":                op("Check the session (or a license, with licenseKey)", clientReq("licenseKey:scalar"), obj{"anyOf": []any{props("valid!:boolean", "loggedIn!:boolean", "expiresAt!:string", "username:string"), ref("LicenseCheck")}}),
	"POST /api/client/end":                  op("End the session", clientReq(), msgData),
	"POST /api/client/variables":            op("The application's variables", clientReq(), list("ClientVariable")),
	"POST /api/client/variable":             op("One application variable", clientReq("key:scalar", "name:scalar"), ref("ClientVariable")),
	"POST /api/client/license-variables":    op("The license's variables", clientReq(), list("ClientVariable")),
	"POST /api/client/license-variable":     op("One license variable", clientReq("key:scalar", "name:scalar"), ref("ClientVariable")),
	"POST /api/client/user-variables":       op("The user's variables", clientReq(), list("ClientVariable")),
	"POST /api/client/user-variable":        op("One user variable", clientReq("key:scalar", "name:scalar"), ref("ClientVariable")),
	"POST /api/client/set-user-variable":    op("Set a user variable", clientReq("key:scalar", "name:scalar", "value!:scalar"), ref("ClientVariable")),
	"POST /api/client/delete-user-variable": op("Delete a user variable", clientReq("key:scalar", "name:scalar"), msgData),
	"POST /api/client/user":                 op("The signed-in user", clientReq(), ref("ClientUser")),
	"POST /api/client/log":                  op("Write a log entry", clientReq("event!:scalar", "message:scalar", "level:scalar", "data:object"), msgData),
	"POST /api/client/token":                op("Validate a token", clientReq("token!:scalar"), props("valid!:boolean", "level!:integer", "usedCount:integer", "maxUses:integer")),
	"POST /api/client/check-license":        op("Check a license key", clientReq("licenseKey!:scalar"), ref("LicenseCheck")),
	"POST /api/client/change-password":      op("Change the signed-in user's password", clientReq("currentPassword!:scalar", "newPassword!:scalar"), msgData),
	"POST /api/client/check-update": op("Is a newer version or file out?", clientReq("currentVersion:scalar", "fileName:scalar", "name:scalar"),
		props("updateAvailable!:boolean", "latestVersion!:string", "currentVersion!:string", "file:UpdateFile", "downloadUrl:string")),
	"POST /api/client/file":          op("Download a file's bytes (X-File-Hash, X-File-Version, X-File-Encrypted, X-File-Nonce)", clientReq("name:scalar", "fileName:scalar"), nil),
	"POST /api/client/request-reset": op("Mail a link that resets the HWID and IP binding", clientReq("licenseKey:scalar", "hwid:scalar"), msgData),
	"POST /api/client/license-file":  op("The signed-in user's offline license file", clientReq(), ref("LicenseFile")),
})

var userPatch = props("password:string", "email:string", "level:integer", "expiresAt:date", "deviceLimit:integer", "enabled:boolean",
	"banned:boolean", "banReason:string", "hwid:string", "displayName:string", "pcName:string", "lockedIp:string",
	"hwidResetMax:integer", "hwidResetCooldown:integer", "ipResetMax:integer", "ipResetCooldown:integer", "metadata:object")

// withVariableRoutes adds the three variable collections (app, user, license), described
// alike, to the operations.
func withVariableRoutes(operationSchemas map[string]opSchema) map[string]opSchema {
	for _, base := range []string{"/api/apps/:appId/variables", "/api/apps/:appId/users/:userId/variables", "/api/apps/:appId/licenses/:licenseId/variables"} {
		operationSchemas["GET "+base] = op("Variables", noBody, list("Variable"))
		operationSchemas["POST "+base] = opSchema{summary: "Create a variable", body: ref("VariableInput"), status: 201, data: ref("Variable")}
		operationSchemas["PATCH "+base+"/:varId"] = op("Change a variable", varBody, ref("Variable"))
		operationSchemas["DELETE "+base+"/:varId"] = op("Delete a variable", noBody, msgData)
	}
	return operationSchemas
}

// wsMessage describes a socket message of one type: {"type": typ, "data": data}.
func wsMessage(typ string, data obj) obj {
	m := obj{"type": "object", "required": []string{"type"}, "properties": obj{"type": obj{"const": typ}}}
	if data != nil {
		m["required"] = []string{"type", "data"}
		m["properties"].(obj)["data"] = data
	}
	return m
}

// wsIn describes a message sent to the server: its members beside type (or inside data).
func wsIn(typ string, words ...string) obj {
	m := props(words...)
	m["required"] = append([]string{"type"}, m["required"].([]string)...)
	m["properties"].(obj)["type"] = obj{"const": typ}
	m["properties"].(obj)["data"] = obj{"type": "object"}
	return m
}

// wsSchemas are the WebSocket messages (docs/API.md, WebSocket channels), as far as
// OpenAPI goes: component schemas the upgrade operations point to; a test checks real
// messages of both sockets against them.
func wsSchemas() obj {
	who := func(words ...string) obj {
		return props(append([]string{"userId!:string", "username!:string"}, words...)...)
	}
	reason := props("reason!:string", "code:string")
	oneOf := func(list ...obj) obj {
		out := make([]any, 0, len(list))
		for _, m := range list {
			out = append(out, m)
		}
		return obj{"oneOf": out}
	}
	return obj{
		"WSClientIn": withExample(obj{"anyOf": []any{
			wsIn("ping"), wsIn("set_status", "status!:string"), wsIn("chat", "message:string"), wsIn("typing", "typing:boolean"),
			wsIn("set_metadata", "metadata:object"),
			obj{"type": "object", "required": []string{"type"}, "description": "Any other type: a custom event the app's hooks see",
				"properties": obj{"type": obj{"type": "string"}, "data": obj{}}},
		}}, obj{"type": "chat", "message": "hello"}),
		"WSClientOut": withExample(oneOf(
			wsMessage("pong", nil), wsMessage("error", props("message!:string")),
			wsMessage("variable_update", props("key!:string", "value!:any", "type!:any")), wsMessage("variable_delete", props("key!:string")),
			wsMessage("user_variable_update", props("key!:string", "value!:any")), wsMessage("user_variable_delete", props("key!:string")),
			wsMessage("message", props("message!:string", "type!:string")), wsMessage("chat", props("message!:string")),
			wsMessage("typing", props("typing!:boolean")), wsMessage("command", props("command!:string", "payload!:object")),
			wsMessage("custom", obj{"type": "object"}), wsMessage("force_logout", reason), wsMessage("banned", reason),
		), obj{"type": "command", "data": obj{"command": "restart", "payload": obj{}}}),
		"WSDashboardIn": withExample(oneOf(
			wsIn("ping"), wsIn("get_online"), wsIn("get_sessions"), wsIn("chat", "userId!:string", "message!:string"),
			wsIn("push_json", "payload!:object", "userId:string"), wsIn("typing", "userId!:string", "typing!:boolean"),
			wsIn("kick", "userId!:string", "reason:string"), wsIn("ban", "userId!:string", "reason:string"),
			wsIn("command", "command!:string", "userId:string", "payload:object"), wsIn("set_filters", "events!:strings"),
		), obj{"type": "kick", "userId": "u-1", "reason": "be nice"}),
		"WSDashboardOut": withExample(oneOf(
			wsMessage("pong", nil), wsMessage("error", props("message!:string")),
			wsMessage("online_count", props("count!:integer")), wsMessage("sessions", props("sessions!:SocketSession[]")),
			wsMessage("session_connect", who("ip!:string", "id!:string")), wsMessage("session_disconnect", who("id!:string")),
			wsMessage("chat", who("message!:string")), wsMessage("status", who("status!:string")), wsMessage("typing", who("typing!:boolean")),
			wsMessage("custom_event", who("event!:string", "data!:any")),
		), obj{"type": "online_count", "data": obj{"count": 1}}),
	}
}

func withExample(s obj, ex any) obj { s["examples"] = []any{ex}; return s }

// handWritten are the components not reflected from a view: inputs, small answers, the
// envelopes. Each has an example the tests validate.
func handWritten() obj {
	out := wsSchemas()
	for k, v := range (obj{
		"VariableInput": withExample(props("key!:string", "value!:any", "type:string"),
			obj{"key": "motd", "value": "hello", "type": "STRING"}),
		"RuleInput": withExample(props("type!:string", "action!:string", "value!:string", "note:string", "enabled:boolean"),
			obj{"type": "ip", "action": "blacklist", "value": "203.0.113.0/24"}),
		"AnalyticsPoint": withExample(props("bucket!:string", "count!:integer"), obj{"bucket": "2026-05-01T10:00:00.000Z", "count": 3}),
		"CountryCount":   withExample(props("country!:string", "count!:integer"), obj{"country": "FR", "count": 3}),
		"RecentEvent": withExample(props("id!:string", "event!:string", "message!:string", "username!:string", "ipAddress!:string", "level!:string", "createdAt!:string?"),
			obj{"id": "l-1", "event": "login", "message": "signed in", "username": "alice", "ipAddress": "203.0.113.9", "level": "info", "createdAt": "2026-05-01T10:00:00.000Z"}),
	}) {
		out[k] = v
	}
	return out
}
