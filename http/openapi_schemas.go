package httpapi

import (
	"encoding/json"
	"net/http"
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
	{"Plan", plans.Plan{}}, {"PlanLimits", plans.Limits{}}, {"Seat", seatView{}}, {"BulkResult", bulkRowResult{}}, {"Delivery", deliveryView{}}, {"UserImport", userImportRow{}}, {"LicenseImport", licenseImportRow{}},
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
func op(summary string, body, data obj) operation {
	return operation{summary: summary, body: body, data: data}
}

// created is an operation answering 201 with the record made.
func created(summary string, body, data obj) operation {
	return operation{summary: summary, body: body, status: http.StatusCreated, data: data}
}

// uploadForm is the multipart body of a file upload.
var uploadForm = obj{"type": "object", "required": []string{"file"}, "properties": obj{
	"file": obj{"type": "string", "contentMediaType": "application/octet-stream"}, "name": obj{"type": "string"}, "version": obj{"type": "string"}}}

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

var userPatch = props("password:string", "email:string", "level:integer", "expiresAt:date", "deviceLimit:integer", "enabled:boolean",
	"banned:boolean", "banReason:string", "hwid:string", "displayName:string", "pcName:string", "lockedIp:string",
	"hwidResetMax:integer", "hwidResetCooldown:integer", "ipResetMax:integer", "ipResetCooldown:integer", "metadata:object")

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
