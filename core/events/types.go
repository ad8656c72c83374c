package events

// Type is an event's dotted name. Every event Keyward publishes has one of the constants
// below: the SPEC 6.1 names (what integrations subscribe to) and the names written to the
// log only. Consumers match on these, never on strings.
type Type string

// The SPEC 6.1 names.
const (
	UserLogin         Type = "user.login"
	UserLoginFailed   Type = "user.login_failed"
	UserRegister      Type = "user.register"
	UserCreate        Type = "user.create"
	UserUpdate        Type = "user.update"
	UserDelete        Type = "user.delete"
	UserBan           Type = "user.ban"
	UserExtend        Type = "user.extend"
	UserHWIDReset     Type = "user.hwid_reset"
	UserSessionKill   Type = "user.session_kill"
	LicenseActivate   Type = "license.activate"
	LicenseCreate     Type = "license.create"
	LicenseUpdate     Type = "license.update"
	LicenseDelete     Type = "license.delete"
	SessionInit       Type = "session.init"
	SessionEnd        Type = "session.end"
	TokenValidate     Type = "token.validate"
	TokenCreate       Type = "token.create"
	TokenDelete       Type = "token.delete"
	FileUpload        Type = "file.upload"
	FileDownload      Type = "file.download"
	FileUpdate        Type = "file.update"
	FileDelete        Type = "file.delete"
	VariableCreate    Type = "variable.create"
	VariableUpdate    Type = "variable.update"
	VariableDelete    Type = "variable.delete"
	RuleCreate        Type = "rule.create"
	RuleUpdate        Type = "rule.update"
	RuleDelete        Type = "rule.delete"
	RuleTriggered     Type = "rule.triggered"
	IntegrationCreate Type = "integration.create"
	IntegrationUpdate Type = "integration.update"
	IntegrationDelete Type = "integration.delete"
	AppUpdate         Type = "app.update"
	AppSecretReset    Type = "app.secret_reset"
)

// Names written to the application log but not offered to integrations.
const (
	AppSigningKeyReset  Type = "app.signing_key_reset"
	UserGrace           Type = "user.grace"
	UserResetRequested  Type = "user.reset_requested"
	LicenseFile         Type = "license.file"
	IntegrationDisabled Type = "integration.disabled"
	IntegrationTest     Type = "integration.test"
	WSConnect           Type = "ws.connect"
	WSHook              Type = "ws.hook"
)

// Store sales (issue 23, core/commerce): logged, offered to integrations, and read by
// the revenue figures.
const (
	OrderPaid     Type = "order.paid"
	OrderRefunded Type = "order.refunded"
	OrderRenewed  Type = "order.renewed"
	OrderCanceled Type = "order.canceled"
)

// CommerceNames are the order events, in their life's order.
var CommerceNames = []Type{OrderPaid, OrderRefunded, OrderRenewed, OrderCanceled}

// Internal changes: stored in the event log so that every node's app actors learn of
// them (the one change signal), never written to the application log nor sent to
// integrations.
const (
	// AppDelete: the app and its records are gone.
	AppDelete Type = "app.delete"
	// AppPlanChange: the owner's plan changed, and with it what the app may do.
	AppPlanChange Type = "app.plan_change"
	// AppHooksChange: the app's WebSocket hooks changed.
	AppHooksChange Type = "app.hooks_change"
)

// Set is a set of event types a consumer cares about.
type Set map[Type]struct{}

// NewSet builds a set of the types.
func NewSet(types ...Type) Set {
	s := make(Set, len(types))
	for _, t := range types {
		s[t] = struct{}{}
	}
	return s
}

// Has reports whether t is in the set.
func (s Set) Has(t Type) bool {
	_, ok := s[t]
	return ok
}

// SpecNames are the SPEC 6.1 names, in the order the spec lists them.
var SpecNames = []Type{UserLogin, UserLoginFailed, UserRegister, UserCreate, UserUpdate, UserDelete, UserBan, UserExtend,
	UserHWIDReset, UserSessionKill, LicenseActivate, LicenseCreate, LicenseUpdate, LicenseDelete, SessionInit, SessionEnd,
	TokenValidate, TokenCreate, TokenDelete, FileUpload, FileDownload, FileUpdate, FileDelete, VariableCreate,
	VariableUpdate, VariableDelete, RuleCreate, RuleUpdate, RuleDelete, RuleTriggered, IntegrationCreate,
	IntegrationUpdate, IntegrationDelete, AppUpdate, AppSecretReset}

// SnapshotChanges are the changes of what an app's snapshot holds (its settings, keys,
// rules, hooks, plan, existence): the app's actor on every node reloads on them and
// revalidates the app's sockets.
var SnapshotChanges = NewSet(AppUpdate, AppSecretReset, AppSigningKeyReset, RuleCreate, RuleUpdate, RuleDelete,
	AppDelete, AppPlanChange, AppHooksChange)

// Internal are the types stored for the app actors only (see AppDelete).
var Internal = NewSet(AppDelete, AppPlanChange, AppHooksChange)
