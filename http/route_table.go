package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/apikeys"
)

// handlerSet holds the handlers the table binds. routeTable takes it zero-valued for the
// declarations alone (scopes, audit policies, operations): a method value of a nil
// handler is never called.
type handlerSet struct {
	accounts     *accountHandlers
	apiKeys      *apiKeyHandlers
	audit        *auditHandlers
	apps         *appHandlers
	data         *appDataHandlers
	analytics    *analyticsHandlers
	files        *fileHandlers
	client       *clientHandlers
	integrations *integrationHandlers
	ws           *wsHandlers
	hooks        *wsHookHandlers
	stores       *storeHandlers
	portal       *portalHandlers
	docs         *apiDocsHandlers
	backups      *backupHandlers
	readyz       gin.HandlerFunc
	metrics      gin.HandlerFunc
}

// The methods of the table's rows, short so that a row reads as a line of ROUTES.md.
const (
	get    = http.MethodGet
	post   = http.MethodPost
	del    = http.MethodDelete
	update = methodUpdate
)

// metricsPath is served on the main listener only when the metrics have no listener of
// their own (Config.MetricsOnMain).
const metricsPath = "/metrics"

// routeTable is every route of ROUTES.md that exists, each declared once. Columns: method
// (update is PATCH and PUT), full path, scope (the grant a scoped key needs, or public,
// client, session, credentials), audit policy, handler, OpenAPI operation. The operation's
// summary may end with "(query: a, b)": those are its documented query members.
func routeTable(h *handlerSet) []route {
	// The three variable collections (app, user, license) are alike.
	variables := func(base string) []row {
		return []row{
			{get, base, "variables:read", notAudited, h.data.listVariables, op("Variables", noBody, list("Variable"))},
			{post, base, "variables:create", auditCreate("variables"), h.data.createVariable,
				created("Create a variable", ref("VariableInput"), ref("Variable"))},
			{update, base + "/:varId", "variables:update", auditUpdate("variables"), h.data.updateVariable, op("Change a variable", varBody, ref("Variable"))},
			{del, base + "/:varId", "variables:delete", auditDelete("variables"), h.data.deleteVariable, op("Delete a variable", noBody, msgData)},
		}
	}
	cred := apikeys.Credentials
	clientAPI := []gin.HandlerFunc{h.client.signClient, h.client.limitIP}

	return expand(append([]section{
		{tag: "Operations", access: accessOpen, rows: []row{
			{get, "/healthz", scopePublic, notAudited, healthz, op("Liveness", noBody, props("status!:string"))},
			{get, "/readyz", scopePublic, notAudited, h.readyz, op("Readiness: each engine's state", noBody,
				obj{"type": "object", "additionalProperties": obj{"enum": []string{"ok", "unavailable"}}})},
			{get, metricsPath, scopePublic, notAudited, h.metrics, op("Prometheus metrics", noBody, nil).answers("text/plain")},
			{get, "/api/openapi.json", scopePublic, notAudited, h.docs.openAPI, op("This description", noBody, nil).answers("application/json")},
			{get, "/api/docs", scopePublic, notAudited, h.docs.page, op("The browsable reference", noBody, nil).answers("text/html")},
			{get, "/api/docs/app.js", scopePublic, notAudited, h.docs.script, op("The reference page's script", noBody, nil).answers("text/javascript")},
		}},

		{tag: "Account", access: accessOpen, rows: []row{
			{get, "/api/plans", scopePublic, notAudited, h.accounts.listPlans, op("The plans", noBody, list("Plan"))},
			{post, "/api/auth/register", scopePublic, notAudited, h.accounts.register,
				operation{summary: "Create an account (a verification mail follows)", body: props("email!:string", "username!:string", "password!:string"),
					status: http.StatusAccepted, data: props("message!:string", "requireVerify!:boolean")}},
			{post, "/api/auth/login", scopePublic, notAudited, h.accounts.login,
				op("Sign in (answers requires2FA when a code is needed)", props("username!:string", "password!:string", "twoFactorCode:string", "recoveryCode:string", "passkey:object"), ref("Session")).
					// A sign-in that needs a code answers 200 with requires2FA (SPEC 7.2).
					orError()},
			{post, "/api/auth/verify-email", scopePublic, notAudited, h.accounts.verifyEmail,
				op("Verify the email and sign in", props("token!:string"), props("message!:string", "token!:string", "account!:AccountSummary", "expiresAt:string"))},
			{post, "/api/auth/resend-verification", scopePublic, notAudited, h.accounts.resendVerification, op("Mail the verification link again", props("email!:string"), msgData)},
			{post, "/api/auth/forgot-password", scopePublic, notAudited, h.accounts.forgotPassword, op("Mail a password reset link", props("email!:string"), msgData)},
			{post, "/api/auth/reset-password", scopePublic, notAudited, h.accounts.resetPassword,
				op("Set a new password with the mailed token", props("token!:string", "newPassword!:string"), msgData)},
			{post, "/api/auth/reset-password-2fa", scopePublic, notAudited, h.accounts.resetPassword2FA,
				op("Set a new password with a 2FA code", props("username!:string", "twoFactorCode!:string", "newPassword!:string"), msgData)},
		}},

		{tag: "Account", access: accessOwner, rows: []row{
			{get, "/api/auth/me", "account:read", notAudited, h.accounts.me, op("The signed-in account", noBody, ref("Account"))},
			{get, "/api/auth/mail-outbox", "account:read", notAudited, h.accounts.mailOutbox,
				op("The folder this server writes its mails to when no SMTP server is set (empty otherwise)", noBody, props("outbox!:string"))},
			{post, "/api/auth/change-password", cred, auditCommand("account"), h.accounts.changePassword,
				op("Change the password (every other session ends; a new token is answered)",
					props("currentPassword!:string", "newPassword!:string", "twoFactorCode:string"), props("message!:string", "token!:string", "expiresAt:string"))},
			{post, "/api/auth/logout", cred, auditCommand("account"), h.accounts.logout, op("End this session", noBody, msgData)},
			{post, "/api/auth/api-key/regenerate", cred, auditCommand("account"), h.accounts.regenerateAPIKey, op("Replace the account key (shown once)", noBody, props("apiKey!:string"))},
			{post, "/api/auth/2fa/setup", cred, auditCommand("account"), h.accounts.setup2FA, op("Start 2FA: a TOTP secret", noBody, props("secret!:string", "otpauth!:string"))},
			{post, "/api/auth/2fa/enable", cred, auditCommand("account"), h.accounts.enable2FA, op("Enable 2FA with a first code (the first time, the ten recovery codes are answered, once)", props("code!:string"), props("message!:string", "recoveryCodes:string[]"))},
			{post, "/api/auth/2fa/disable", cred, auditCommand("account"), h.accounts.disable2FA, op("Disable 2FA", props("password!:string", "code!:string"), msgData)},
			{post, "/api/auth/plan", cred, auditCommand("account"), h.accounts.selectPlan, op("Choose a plan", props("plan!:string"), ref("Account"))},
		}},
		accountRefreshSection(h), accountSessionSection(h), // http/accounts_sessions.go
		accountPasskeyLoginSection(h), accountPasskeySection(h), // http/route_table_account.go

		{tag: "API keys", access: accessOwner, rows: []row{
			{get, "/api/auth/api-keys", cred, notAudited, h.apiKeys.list, op("List scoped API keys (masked)", noBody, list("APIKey"))},
			{post, "/api/auth/api-keys", cred, auditCreate("api_keys"), h.apiKeys.create,
				created("Create a scoped API key (the full key is shown once)", ref("APIKeyInput"), ref("APIKeyCreated"))},
			{update, "/api/auth/api-keys/:keyId", cred, auditUpdate("api_keys"), h.apiKeys.update, op("Change a scoped API key", ref("APIKeyInput"), ref("APIKey"))},
			{del, "/api/auth/api-keys/:keyId", cred, auditDelete("api_keys"), h.apiKeys.revoke, op("Revoke a scoped API key", noBody, msgData)},
		}},

		{tag: "Administration", access: accessAdmin, rows: []row{
			{get, "/api/admin/accounts", "admin:read", notAudited, h.accounts.adminList,
				op("Accounts (administrators; query: search, limit, offset)", noBody, pageSchema("accounts", "Account"))},
			{update, "/api/admin/accounts/:accountId", "admin:update", auditUpdate("account"), h.accounts.adminChange,
				op("Change an account's plan or role (administrators)", props("plan:string", "role:string"), ref("Account"))},
			{get, "/api/admin/audit", "admin:read", notAudited, h.audit.any,
				op("Any account's audit log (administrators; query: accountId, appId, actorId, recordType, from, to, limit, offset)", noBody, ref("AuditPage"))},
		}},

		backupSection(h),

		{tag: "Audit", access: accessOwner, rows: []row{
			{get, "/api/audit", "audit:read", notAudited, h.audit.own,
				op("The account's audit log (query: appId, actorId, recordType, from, to, limit, offset)", noBody, ref("AuditPage"))},
		}},

		{tag: "Apps", access: accessOwner, rows: []row{
			{get, "/api/apps", "apps:read", notAudited, h.apps.list, op("The account's applications", noBody, list("App"))},
			{post, "/api/apps", "apps:create", auditCreate("apps"), h.apps.create,
				created("Create an application (the full secret is shown once)", props("name!:string", "description:string", "version:string"), ref("App"))},
			{get, "/api/apps/:appId", "apps:read", notAudited, h.apps.get, op("An application (with its public key)", noBody, ref("App"))},
			{update, "/api/apps/:appId", "apps:update", auditUpdate("apps"), h.apps.update, op("Change an application",
				props("name:string", "description:string", "version:string", "enabled:boolean", "paused:boolean",
					"antiDebug:boolean", "antiVM:boolean", "lockHwid:boolean", "lockIp:boolean", "lockPcName:boolean", "sessionTimeout:integer",
					"fileEncryption:boolean", "signResponses:boolean", "graceSeconds:integer", "licenseFileDays:integer"), ref("App"))},
			{del, "/api/apps/:appId", "apps:delete", auditDelete("apps"), h.apps.delete, op("Delete an application and all its data", props("confirm!:boolean"), msgData)},
			{post, "/api/apps/:appId/secret/regenerate", "apps:update", auditCommand("apps"), h.apps.regenerateSecret, op("Replace the application secret (shown once)", noBody, secret)},
			{post, "/api/apps/:appId/signing-key/regenerate", "apps:update", auditCommand("apps"), h.apps.regenerateSigningKey, op("Replace the signing key pair", noBody, ref("App"))},
			{get, "/api/apps/:appId/stats", "apps:read", notAudited, h.apps.stats, op("Counts of the application", noBody, members(obj{
				"users": props("total!:integer", "active!:integer", "banned!:integer"), "licenses": props("total!:integer", "used!:integer", "unused!:integer"),
				"sessions": props("active!:integer"), "logins": props("today!:integer", "thisWeek!:integer")}))},
		}},

		{tag: "Users", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/users", "users:read", notAudited, h.apps.listUsers,
				op("Users (query: search, sortBy, sortOrder, banned, expired, inGrace, limit, offset)", noBody, pageSchema("users", "User"))},
			{post, "/api/apps/:appId/users", "users:create", auditCreate("users"), h.apps.createUser, created("Create a user",
				props("username!:string", "password!:string", "email:string", "level:integer", "expiresAt:date", "deviceLimit:integer", "metadata:object"), ref("User"))},
			{get, "/api/apps/:appId/users/:userId", "users:read", notAudited, h.apps.getUser, op("A user with devices and subscriptions", noBody, ref("User"))},
			{update, "/api/apps/:appId/users/:userId", "users:update", auditUpdate("users"), h.apps.updateUser, op("Change a user", userPatch, ref("User"))},
			{del, "/api/apps/:appId/users/:userId", "users:delete", auditDelete("users"), h.apps.deleteUser, op("Delete a user", noBody, msgData)},
			{post, "/api/apps/:appId/users/:userId/kill-sessions", "users:update", auditCommand("users"), h.apps.killSessions,
				op("End every client session of a user", noBody, deleted)},
			{post, "/api/apps/:appId/users/:userId/reset-hwid", "users:update", auditCommand("users"), h.apps.resetHWID,
				op("Reset a user's hardware binding", noBody, props("message!:string", "devicesRemoved!:integer", "hwidResets!:integer"))},
			{post, "/api/apps/:appId/users/:userId/extend", "users:update", auditCommand("users"), h.apps.extendUser,
				op("Extend a user's subscription by duration seconds", props("duration!:integer"), ref("User"))},
		}},
		{tag: "Users", access: accessAdmin, rows: []row{
			{get, "/api/apps/:appId/users/:userId/ip", "users:read", notAudited, h.apps.userIP,
				op("A user's IP addresses (administrators)", noBody, props("lastLoginIp!:string", "lockedIp!:string"))},
		}},

		{tag: "Licenses", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/licenses", "licenses:read", notAudited, h.apps.listLicenses,
				op("Licenses (query: search, sortBy, sortOrder, used, banned, expired, limit, offset)", noBody, pageSchema("licenses", "License"))},
			{post, "/api/apps/:appId/licenses", "licenses:create", auditCreate("licenses"), h.apps.createLicenses, created("Create licenses",
				props("count:integer", "level:integer", "maxUses:integer", "duration:integer", "expiresAt:date", "prefix:string", "note:string", "maxSeats:integer"),
				batch("licenses", "License"))},
			// A read sent as POST (the key stays out of URLs and logs); recorded as any POST was.
			{post, "/api/apps/:appId/licenses/verify", "licenses:read", auditCommand("licenses"), h.apps.verifyLicense,
				op("Find a license by its key", props("key!:string"), ref("License"))},
			{post, "/api/apps/:appId/licenses/bulk-delete", "licenses:delete", auditPurge("licenses"), h.apps.bulkDeleteLicenses,
				op("Delete licenses by id or by filter (used, unused, expired, banned, all)", props("ids:strings", "filter:string"), deleted)},
			{get, "/api/apps/:appId/licenses/:licenseId", "licenses:read", notAudited, h.apps.getLicense, op("A license", noBody, ref("License"))},
			{update, "/api/apps/:appId/licenses/:licenseId", "licenses:update", auditUpdate("licenses"), h.apps.updateLicense, op("Change a license",
				props("level:integer", "maxUses:integer", "duration:integer", "deviceLimit:integer", "maxSeats:integer", "displayName:string",
					"note:string", "discordId:string", "enabled:boolean", "banned:boolean"), ref("License"))},
			{del, "/api/apps/:appId/licenses/:licenseId", "licenses:delete", auditDelete("licenses"), h.apps.deleteLicense, op("Delete a license", noBody, msgData)},
		}},
		{tag: "Licenses", access: accessAdmin, rows: []row{
			{get, "/api/apps/:appId/licenses/:licenseId/user", "licenses:read", notAudited, h.apps.licenseUser,
				op("The user of a license (administrators)", noBody, props("username!:string", "lastLoginIp!:string", "lockedIp!:string", "hwid!:string", "pcName!:string"))},
		}},
		{tag: "Licenses", access: accessOwner, rows: []row{
			// Issues a signed offline license file.
			{post, "/api/apps/:appId/licenses/:licenseId/file", "licenses:create", auditCreate("licenses"), h.apps.licenseFile,
				op("Issue a signed offline license file", noBody, ref("LicenseFile"))},
			{get, "/api/apps/:appId/licenses/:licenseId/seats", "licenses:read", notAudited, h.apps.listSeats,
				op("The seats in use of a floating license", noBody, props("maxSeats!:integer", "inUse!:integer", "seats!:Seat[]"))},
			// Frees a seat (deletes it): that session ends.
			{del, "/api/apps/:appId/licenses/:licenseId/seats/:seatId", "licenses:update", auditDelete("licenses"), h.apps.freeSeat,
				op("Free a seat (ends that session)", noBody, msgData)},
		}},

		{tag: "Devices", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/devices", "devices:read", notAudited, h.apps.listDevices, op("Devices (query: search, limit, offset)", noBody, pageSchema("devices", "Device"))},
			{del, "/api/apps/:appId/devices/:deviceId", "devices:delete", auditDelete("devices"), h.apps.deleteDevice, op("Forget a device", noBody, msgData)},
		}},

		{tag: "Tokens", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/tokens", "tokens:read", notAudited, h.apps.listTokens, op("Tokens (query: limit, offset)", noBody, pageSchema("tokens", "Token"))},
			{post, "/api/apps/:appId/tokens", "tokens:create", auditCreate("tokens"), h.apps.createTokens, created("Create tokens",
				props("count:integer", "maxUses:integer", "expiresAt:date", "note:string", "level:integer"), batch("tokens", "Token"))},
			{update, "/api/apps/:appId/tokens/:tokenId", "tokens:update", auditUpdate("tokens"), h.apps.updateToken,
				op("Change a token", props("maxUses:integer", "note:string", "enabled:boolean", "level:integer"), ref("Token"))},
			{del, "/api/apps/:appId/tokens/:tokenId", "tokens:delete", auditDelete("tokens"), h.apps.deleteToken, op("Delete a token", noBody, msgData)},
		}},

		{tag: "Variables", access: accessOwner, rows: concat(
			variables("/api/apps/:appId/variables"),
			variables("/api/apps/:appId/users/:userId/variables"),
			variables("/api/apps/:appId/licenses/:licenseId/variables"),
			[]row{{post, "/api/apps/:appId/variables/bulk", "variables:write", auditCreate("variables"), h.data.bulkVariables,
				created("Create or replace many application variables", props("variables!:VariableInput[]"), batch("variables", "Variable"))}},
		)},

		{tag: "Rules", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/rules", "rules:read", notAudited, h.data.listRules, op("Access rules (query: type, action)", noBody, list("Rule"))},
			{post, "/api/apps/:appId/rules", "rules:create", auditCreate("rules"), h.data.createRule, created("Create an access rule", ref("RuleInput"), ref("Rule"))},
			{post, "/api/apps/:appId/rules/bulk", "rules:write", auditCreate("rules"), h.data.bulkRules,
				created("Create many access rules", props("rules!:RuleInput[]"), batch("rules", "Rule"))},
			{update, "/api/apps/:appId/rules/:ruleId", "rules:update", auditUpdate("rules"), h.data.updateRule,
				op("Change an access rule", props("value:string", "note:string", "enabled:boolean"), ref("Rule"))},
			{del, "/api/apps/:appId/rules/:ruleId", "rules:delete", auditDelete("rules"), h.data.deleteRule, op("Delete an access rule", noBody, msgData)},
		}},

		{tag: "Logs", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/logs", "logs:read", notAudited, h.data.listLogs,
				op("Logs (query: event, level, username, startDate, endDate, limit, offset)", noBody, pageSchema("logs", "LogEntry"))},
			{get, "/api/apps/:appId/logs/stats", "logs:read", notAudited, h.data.logStats, op("Log counts by level and event (query: hours)", noBody,
				obj{"type": "object", "required": []string{"total", "byLevel", "byEvent"}, "properties": obj{"total": obj{"type": "integer"},
					"byLevel": obj{"type": "object", "additionalProperties": obj{"type": "integer"}}, "byEvent": obj{"type": "object", "additionalProperties": obj{"type": "integer"}}}})},
			{get, "/api/apps/:appId/logs/events", "logs:read", notAudited, h.data.logEvents, op("The event names seen", noBody, typeOf("strings"))},
			{del, "/api/apps/:appId/logs", "logs:delete", auditPurge("logs"), h.data.purgeLogs, op("Purge logs older than some days (query: days)", noBody, deleted)},
		}},

		{tag: "Analytics", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/analytics/overview", "analytics:read", notAudited, h.analytics.overview,
				op("Analytics overview (query: period)", noBody, members(obj{"period": typeOf("string"),
					"users": props("total!:integer", "new!:integer", "active!:integer", "banned!:integer"), "licenses": props("total!:integer", "unused!:integer"),
					"sessions": props("active!:integer"), "activity": props("logins!:integer", "failedLogins!:integer", "registrations!:integer")}))},
			{get, "/api/apps/:appId/analytics/timeseries", "analytics:read", notAudited, h.analytics.timeseries,
				op("Event counts per bucket (query: period, event)", noBody, typeOf("AnalyticsPoint[]"))},
			{get, "/api/apps/:appId/analytics/geography", "analytics:read", notAudited, h.analytics.geography,
				op("Logins by country (query: days)", noBody, typeOf("CountryCount[]"))},
			{get, "/api/apps/:appId/analytics/recent", "analytics:read", notAudited, h.analytics.recent,
				op("Recent events (query: limit)", noBody, typeOf("RecentEvent[]"))},
		}},

		{tag: "Files", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/files", "files:read", notAudited, h.files.list, op("Files", noBody, list("File"))},
			{post, uploadRoute, "files:create", auditCreate("files"), h.files.upload,
				created("Upload a file (multipart: file, name, version)", noBody, ref("File")).form(uploadForm)},
			{get, "/api/apps/:appId/files/:fileId/download", "files:read", notAudited, h.files.download,
				op("Download a file's bytes", noBody, nil).answers("application/octet-stream")},
			{update, "/api/apps/:appId/files/:fileId", "files:update", auditUpdate("files"), h.files.update,
				op("Rename or re-version a file", props("name:string", "version:string"), ref("File"))},
			{del, "/api/apps/:appId/files/:fileId", "files:delete", auditDelete("files"), h.files.delete, op("Delete a file", noBody, msgData)},
		}},

		// The Client API (SPEC 5, CLIENT-SDKS.md): the application signs in each call
		// (signClient) under the per-address limit. Members are read as text, so numbers
		// and booleans are accepted where strings are meant.
		{tag: "Client API", access: accessOpen, before: clientAPI, rows: []row{
			{post, "/api/client/init", scopeClient, notAudited, h.client.init, op("Open a session", props("secret!:scalar", "version:scalar", "hwid:scalar"), ref("ClientInit"))},
			{post, "/api/client/nonce", scopeClient, notAudited, h.client.nonce, op("A nonce for the next call (X-Nonce)", clientReq(), props("nonce!:string"))},
			{post, "/api/client/login", scopeClient, notAudited, h.client.login, op("Sign a user in",
				clientReq("username!:scalar", "password!:scalar", "licenseKey:scalar", "hwid:scalar", "pcName:scalar"), ref("ClientUser"))},
			{post, "/api/client/register", scopeClient, notAudited, h.client.register, op("Register a user with a license key",
				clientReq("username!:scalar", "password!:scalar", "email:scalar", "displayName:scalar", "licenseKey:scalar", "hwid:scalar", "pcName:scalar"), ref("ClientUser"))},
			{post, "/api/client/license", scopeClient, notAudited, h.client.license,
				op("Sign in with a license key alone", clientReq("licenseKey!:scalar", "hwid:scalar", "pcName:scalar"), ref("ClientUser"))},
			{post, "/api/client/activate", scopeClient, notAudited, h.client.activate, op("Activate a license on the signed-in user", clientReq("licenseKey!:scalar"),
				props("level!:integer", "username!:string", "licenseActivated!:boolean", "expiresAt:string"))},
			{post, "/api/client/heartbeat", scopeClient, notAudited, h.client.heartbeat, op("Keep the session alive", clientReq(), props("expiresAt!:string"))},
			{post, "/api/client/check", scopeClient, notAudited, h.client.check, op("Check the session (or a license, with licenseKey)", clientReq("licenseKey:scalar"),
				obj{"anyOf": []any{props("valid!:boolean", "loggedIn!:boolean", "expiresAt!:string", "username:string"), ref("LicenseCheck")}})},
			{post, "/api/client/end", scopeClient, notAudited, h.client.end, op("End the session", clientReq(), msgData)},
			{post, "/api/client/variables", scopeClient, notAudited, h.client.variables, op("The application's variables", clientReq(), list("ClientVariable"))},
			{post, "/api/client/variable", scopeClient, notAudited, h.client.variable, op("One application variable", clientReq("key:scalar", "name:scalar"), ref("ClientVariable"))},
			{post, "/api/client/license-variables", scopeClient, notAudited, h.client.licenseVariables, op("The license's variables", clientReq(), list("ClientVariable"))},
			{post, "/api/client/license-variable", scopeClient, notAudited, h.client.licenseVariable,
				op("One license variable", clientReq("key:scalar", "name:scalar"), ref("ClientVariable"))},
			{post, "/api/client/user-variables", scopeClient, notAudited, h.client.userVariables, op("The user's variables", clientReq(), list("ClientVariable"))},
			{post, "/api/client/user-variable", scopeClient, notAudited, h.client.userVariable, op("One user variable", clientReq("key:scalar", "name:scalar"), ref("ClientVariable"))},
			{post, "/api/client/set-user-variable", scopeClient, notAudited, h.client.setUserVariable,
				op("Set a user variable", clientReq("key:scalar", "name:scalar", "value!:scalar"), ref("ClientVariable"))},
			{post, "/api/client/delete-user-variable", scopeClient, notAudited, h.client.deleteUserVariable,
				op("Delete a user variable", clientReq("key:scalar", "name:scalar"), msgData)},
			{post, "/api/client/user", scopeClient, notAudited, h.client.user, op("The signed-in user", clientReq(), ref("ClientUser"))},
			{post, "/api/client/log", scopeClient, notAudited, h.client.log,
				op("Write a log entry", clientReq("event!:scalar", "message:scalar", "level:scalar", "data:object"), msgData)},
			{post, "/api/client/token", scopeClient, notAudited, h.client.token, op("Validate a token", clientReq("token!:scalar"),
				props("valid!:boolean", "level!:integer", "usedCount:integer", "maxUses:integer"))},
			{post, "/api/client/check-license", scopeClient, notAudited, h.client.checkLicense, op("Check a license key", clientReq("licenseKey!:scalar"), ref("LicenseCheck"))},
			{post, "/api/client/change-password", scopeClient, notAudited, h.client.changePassword,
				op("Change the signed-in user's password", clientReq("currentPassword!:scalar", "newPassword!:scalar"), msgData)},
			{post, "/api/client/check-update", scopeClient, notAudited, h.client.checkUpdate, op("Is a newer version or file out?",
				clientReq("currentVersion:scalar", "fileName:scalar", "name:scalar"),
				props("updateAvailable!:boolean", "latestVersion!:string", "currentVersion!:string", "file:UpdateFile", "downloadUrl:string"))},
			{post, "/api/client/file", scopeClient, notAudited, h.client.file,
				op("Download a file's bytes (X-File-Hash, X-File-Version, X-File-Encrypted, X-File-Nonce)", clientReq("name:scalar", "fileName:scalar"), nil).
					answers("application/octet-stream")},
			{post, "/api/client/license-file", scopeClient, notAudited, h.client.licenseFile, op("The signed-in user's offline license file", clientReq(), ref("LicenseFile"))},
			// The HWID/IP reset a client requests and its user confirms by mail.
			{post, "/api/client/request-reset", scopeClient, notAudited, h.client.requestReset,
				op("Mail a link that resets the HWID and IP binding", clientReq("licenseKey:scalar", "hwid:scalar"), msgData)},
			{get, "/api/client/confirm-reset/:token", scopeClient, notAudited, h.client.confirmReset,
				op("Confirm a mailed HWID/IP reset (an HTML page)", noBody, nil).answers("text/html")},
		}},

		{tag: "Integrations", access: accessOwner, rows: []row{
			{get, "/api/integrations/events", "integrations:read", notAudited, h.integrations.events,
				op("The event names integrations subscribe to", noBody, typeOf("strings"))},
			{get, "/api/apps/:appId/integrations", "integrations:read", notAudited, h.integrations.list, op("Integrations", noBody, list("Integration"))},
			{post, "/api/apps/:appId/integrations", "integrations:create", auditCreate("integrations"), h.integrations.create,
				created("Create an integration (a CUSTOM one's secret is shown once)",
					props("name!:string", "type!:string", "webhookUrl!:string", "events:strings", "enabled:boolean"), ref("Integration"))},
			{get, "/api/apps/:appId/integrations/:integrationId", "integrations:read", notAudited, h.integrations.get, op("An integration", noBody, ref("Integration"))},
			{update, "/api/apps/:appId/integrations/:integrationId", "integrations:update", auditUpdate("integrations"), h.integrations.update,
				op("Change an integration", props("name:string", "webhookUrl:string", "events:strings", "enabled:boolean"), ref("Integration"))},
			{del, "/api/apps/:appId/integrations/:integrationId", "integrations:delete", auditDelete("integrations"), h.integrations.delete,
				op("Delete an integration", noBody, msgData)},
			{post, "/api/apps/:appId/integrations/:integrationId/test", "integrations:update", auditCommand("integrations"), h.integrations.test,
				op("Send a test delivery", noBody, props("message!:string", "delivered!:boolean", "statusCode!:integer", "latencyMs!:integer", "error:string"))},
			{post, "/api/apps/:appId/integrations/:integrationId/secret/regenerate", "integrations:update", auditCommand("integrations"), h.integrations.regenerateSecret,
				op("Replace the signing secret (shown once)", noBody, secret)},
			{get, "/api/apps/:appId/integrations/:integrationId/deliveries", "integrations:read", notAudited, h.integrations.deliveries,
				op("Delivery attempts (query: limit, offset)", noBody, pageSchema("attempts", "DeliveryAttempt"))},
		}},

		// The sockets authenticate in their handlers (the token in the URL) before the
		// upgrade.
		{tag: "Client API", access: accessOpen, rows: []row{
			{get, clientSocketPath, scopeClient, notAudited, h.clientSocket, op("The program's socket (WebSocket)", noBody, nil).socket("WSClient")},
		}},
		{tag: "WebSocket", access: accessOpen, rows: []row{
			{get, "/api/apps/:appId/ws/connect", scopeSession, notAudited, h.ws.dashboard,
				op("The owner's dashboard socket (WebSocket)", noBody, nil).socket("WSDashboard")},
		}},
		// The REST helpers of the sockets: the owner's app on a plan with WebSocket access.
		{tag: "WebSocket", access: accessOwner, before: []gin.HandlerFunc{h.ws.gate}, rows: []row{
			{get, "/api/apps/:appId/ws/online", "realtime:read", notAudited, h.ws.online, op("Users online", noBody, count)},
			{get, "/api/apps/:appId/ws/sessions", "realtime:read", notAudited, h.ws.sessions,
				op("Sockets online", noBody, props("count!:integer", "sessions!:SocketSession[]"))},
			{post, "/api/apps/:appId/ws/broadcast", "realtime:create", auditCommand("realtime"), h.ws.broadcast,
				op("Broadcast a message to every socket", props("message!:string", "type:string"), props("sent!:boolean", "onlineUsers!:integer"))},
			{post, "/api/apps/:appId/ws/users/:userId/force-logout", "realtime:update", auditCommand("realtime"), h.ws.forceLogout,
				op("Force a user's sockets to log out", reason, sentTo)},
			{post, "/api/apps/:appId/ws/users/:userId/kick", "realtime:update", auditCommand("realtime"), h.ws.kick, op("Close a user's sockets", reason, sentTo)},
			{post, "/api/apps/:appId/ws/users/:userId/ban", "realtime:update", auditCommand("realtime"), h.ws.ban,
				op("Ban a user and close their sockets", reason, props("banned!:boolean", "userId!:string"))},
			{post, "/api/apps/:appId/ws/chat", "realtime:create", auditCommand("realtime"), h.ws.chat,
				op("Send a chat message to a user", props("userId!:string", "message!:string"), props("sent!:boolean"))},
			{post, "/api/apps/:appId/ws/command", "realtime:create", auditCommand("realtime"), h.ws.command,
				op("Send a command (to a user, or to every socket)", props("command!:string", "userId:string", "payload:object"), props("sent!:boolean", "recipients!:integer"))},
			{post, "/api/apps/:appId/ws/push", "realtime:create", auditCommand("realtime"), h.ws.push,
				op("Push JSON (to a user, or to every socket)", props("payload!:object", "userId:string"), props("sent!:boolean", "recipients!:integer"))},
		}},
		// The hooks service checks the app and the plan itself, so its routes skip the gate.
		{tag: "WebSocket", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/ws/hooks", "hooks:read", notAudited, h.hooks.list, op("Socket hooks", noBody, props("count!:integer", "hooks!:WSHook[]"))},
			{post, "/api/apps/:appId/ws/hooks", "hooks:create", auditCreate("hooks"), h.hooks.create, created("Create a socket hook",
				props("name!:string", "event!:string", "description:string", "conditions:HookCondition[]", "actions!:HookAction[]", "enabled:boolean", "priority:integer"),
				ref("WSHook"))},
			{update, "/api/apps/:appId/ws/hooks/:hookId", "hooks:update", auditUpdate("hooks"), h.hooks.update, op("Change a socket hook",
				props("name:string", "event:string", "description:string", "conditions:HookCondition[]", "actions:HookAction[]", "enabled:boolean", "priority:integer"),
				ref("WSHook"))},
			{del, "/api/apps/:appId/ws/hooks/:hookId", "hooks:delete", auditDelete("hooks"), h.hooks.delete, op("Delete a socket hook", noBody, msgData)},
		}},
	}, append(append(bulkSections(h), storeRoutes(h.stores)...), portalRoutes(h.portal, h.apps)...)...))
}

// clientSocket serves the program's socket with the Client API's handlers (the socket's
// calls share their session rules).
func (h *handlerSet) clientSocket(c *gin.Context) { h.ws.client(c, h.client) }

func concat(parts ...[]row) []row {
	var out []row
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
