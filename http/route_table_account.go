package httpapi

import "github.com/keyward/keyward/core/apikeys"

// The owner's passkeys (issue 25; http/passkeys.go). Schemas of the ceremonies: begin
// answers the options navigator.credentials takes ({"publicKey": ...}); finish sends the
// browser's PublicKeyCredential as JSON.
var (
	passkeyCeremony = props("challengeId!:string", "options!:object", "expiresAt!:string")
	passkeyFinish   = props("challengeId!:string", "credential!:object")
	passkeySchema   = props("id!:string", "name!:string", "createdAt!:string", "lastUsedAt:string?", "backedUp!:boolean")
)

// sessionArtifactRoutes are the owner POSTs that write no audit entry: each stores only a
// short-lived, single-use secret of the signed-in session (a socket ticket, a ceremony's
// challenge) and changes nothing of the account; the change a ceremony makes is audited
// where it is finished.
var sessionArtifactRoutes = []string{
	"POST /api/auth/ws-ticket",
	"POST /api/auth/passkeys/register/begin",
	"POST /api/auth/reauth/passkey/begin",
}

// accountPasskeyLoginSection holds the open routes of a passkey sign-in and of the mailed
// links of an email change.
func accountPasskeyLoginSection(h *handlerSet) section {
	return section{tag: "Account", access: accessOpen, rows: []row{
		{post, "/api/auth/passkeys/login/begin", scopePublic, notAudited, h.accounts.passkeyLoginBegin,
			op("Begin a sign-in with a passkey (without username: any discoverable passkey)", props("username:string"), passkeyCeremony)},
		{post, "/api/auth/passkeys/login/finish", scopePublic, notAudited, h.accounts.passkeyLoginFinish,
			op("Finish a passkey sign-in: the browser's assertion", passkeyFinish, ref("Session"))},
		{post, "/api/auth/change-email/confirm", scopePublic, notAudited, h.accounts.confirmEmailChange,
			op("Make an email change with the token mailed to the new address", props("token!:string"), msgData)},
		{post, "/api/auth/change-email/cancel", scopePublic, notAudited, h.accounts.cancelEmailChange,
			op("Cancel an email change with the token mailed to the old address", props("token!:string"), msgData)},
	}}
}

// accountPasskeySection holds the owner's routes of their passkeys and of a passkey
// reauthentication.
func accountPasskeySection(h *handlerSet) section {
	cred := apikeys.Credentials
	return section{tag: "Account", access: accessOwner, rows: []row{
		{get, "/api/auth/passkeys", cred, notAudited, h.accounts.listPasskeys, op("The account's passkeys", noBody, obj{"type": "array", "items": passkeySchema})},
		{post, "/api/auth/passkeys/register/begin", cred, notAudited, h.accounts.passkeyRegisterBegin,
			op("Begin adding a passkey (needs a recent sign-in)", noBody, passkeyCeremony)},
		{post, "/api/auth/passkeys/register/finish", cred, auditCreate("account"), h.accounts.passkeyRegisterFinish,
			created("Finish adding a passkey: the browser's attestation and a name (the first time, the ten recovery codes are answered, once)",
				props("challengeId!:string", "credential!:object", "name:string"),
				props("id!:string", "name!:string", "createdAt!:string", "lastUsedAt:string?", "backedUp!:boolean", "recoveryCodes:string[]"))},
		{update, "/api/auth/passkeys/:passkeyId", cred, auditUpdate("account"), h.accounts.renamePasskey, op("Rename a passkey", props("name!:string"), msgData)},
		{del, "/api/auth/passkeys/:passkeyId", cred, auditDelete("account"), h.accounts.deletePasskey, op("Remove a passkey (needs a recent sign-in)", noBody, msgData)},
		{post, "/api/auth/change-email", cred, auditCommand("account"), h.accounts.changeEmail,
			op("Ask to change the email (needs a recent sign-in): a link to the new address, a notice with a cancel link to the old", props("email!:string"), msgData)},
		{post, "/api/auth/reauth/passkey/begin", cred, notAudited, h.accounts.passkeyReauthBegin,
			op("Begin confirming it is you with a passkey (finish with POST /api/auth/reauth {passkey})", noBody, passkeyCeremony)},
	}}
}
