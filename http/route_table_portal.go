package httpapi

// portalRoutes are the buyer portal's routes (issue 23): the page and its assets, and the
// JSON routes the page calls. They are public in the table: the session cookie made from a
// license key and a mailed one-time code is the credential (portal.go checks it), and the
// buyer's actions write their own audit entries (commerce.Portal), so the owner's audit
// policy does not apply. The owner's settings of the portal are a route of the app
// (portalSettingsRoutes).
func portalRoutes(h *portalHandlers, owner *appHandlers) []section {
	base := portalPrefix + ":appId"
	switches := props("hwidReset!:boolean", "seatRelease!:boolean", "downloads!:boolean", "resend!:boolean")
	seat := props("id!:string", "username!:string", "since!:string?")
	file := props("id!:string", "name!:string", "version!:string", "size!:integer")
	license := props("app!:string", "key!:string", "status!:string", "level!:integer", "expiresAt!:string?", "maxSeats!:integer",
		"seatsUsed!:integer", "deviceLimit!:integer", "hwidBound!:boolean", "hwidResets!:integer", "hwidResetMax!:integer",
		"nextResetAt!:string?", "switches!:object", "seats!:object[]", "files!:object[]")
	license["properties"].(obj)["switches"] = switches
	license["properties"].(obj)["seats"] = obj{"type": "array", "items": seat}
	license["properties"].(obj)["files"] = obj{"type": "array", "items": file}
	return []section{portalSettingsRoutes(owner), {tag: "Buyer portal", access: accessOpen, rows: []row{
		{get, base, scopePublic, notAudited, h.pageOf,
			op("The buyer portal's page (HTML) of an app whose owner turned it on", noBody, nil).answers("text/html")},
		{get, base + "/portal.js", scopePublic, notAudited, h.asset("portal.js"), op("The portal's script", noBody, nil).answers("text/javascript")},
		{get, base + "/portal.css", scopePublic, notAudited, h.asset("portal.css"), op("The portal's stylesheet", noBody, nil).answers("text/css")},
		{post, base + "/api/code", scopePublic, notAudited, h.requestCode,
			op("Mail a one-time sign-in code to the address of the key's order (the same answer for every key; limited per key and address)",
				props("key!:string"), msgData)},
		{post, base + "/api/session", scopePublic, notAudited, h.signIn,
			op("Sign in with the key and the mailed code (once, within 10 minutes; tries limited per key and address): sets the portal's session cookie",
				props("key!:string", "code!:string"), msgData)},
		{del, base + "/api/session", scopePublic, notAudited, h.signOut, op("Sign out of the portal", noBody, msgData)},
		{get, base + "/api/license", scopePublic, notAudited, h.license, op("The signed-in buyer's license: status, expiry, level, seats, files", noBody, license)},
		{post, base + "/api/reset-hwid", scopePublic, notAudited, h.resetHWID,
			op("Reset the hardware binding within the user's reset limit and cooldown (when the owner allows it)", noBody, msgData)},
		{del, base + "/api/seats/:seatId", scopePublic, notAudited, h.releaseSeat, op("Release a seat of the license (when the owner allows it)", noBody, msgData)},
		{get, base + "/api/files/:fileId", scopePublic, notAudited, h.download,
			op("Download one of the app's files (an active license, when the owner allows it)", noBody, nil).answers("application/octet-stream")},
		{post, base + "/api/resend", scopePublic, notAudited, h.resend, op("Mail the key again to the order's address (when the owner allows it)", noBody, msgData)},
	}}}
}

// portalSettingsRoutes are the owner's settings of the app's buyer portal: a part of the
// app (storage.App.Portal), read and changed with the app's scopes and audited as the
// app's update.
func portalSettingsRoutes(h *appHandlers) section {
	settings := props("enabled!:boolean", "path!:string", "hwidReset!:boolean", "seatRelease!:boolean", "downloads!:boolean", "resend!:boolean")
	return section{tag: "Apps", access: accessOwner, rows: []row{
		{get, "/api/apps/:appId/portal", "apps:read", notAudited, h.portalSettings,
			op("The application's buyer portal: on or off, its address, and each buyer action's switch", noBody, settings)},
		{update, "/api/apps/:appId/portal", "apps:update", auditUpdate("apps"), h.updatePortalSettings,
			op("Turn the buyer portal and its actions on or off (given members only)",
				props("enabled:boolean", "hwidReset:boolean", "seatRelease:boolean", "downloads:boolean", "resend:boolean"), settings)},
	}}
}
