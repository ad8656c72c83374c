package httpapi

// bulkSections are the routes that act on many records in one request (issue 22): one
// bounded request, one answer with each record's outcome, one audit entry holding every
// changed record's before and after (Audit.Bulk).
func bulkSections(h *handlerSet) []section {
	bulkResults := props("action!:string", "succeeded!:integer", "failed!:integer", "results!:BulkResult[]")
	return []section{
		{tag: "Users", access: accessOwner, rows: []row{
			{post, "/api/apps/:appId/users/bulk", "users:update", auditBulk("users"), h.apps.bulkUsers,
				op("Act on many users at once: ban, unban, extend (duration seconds), reset-hwid or delete, on up to 1000 ids or on every expired user (filter \"expired\")",
					props("action!:string", "ids:strings", "filter:string", "duration:integer", "banReason:string"), bulkResults)},
			{post, "/api/apps/:appId/users/import", "users:create", auditBulk("users"), h.apps.importUsers,
				op("Create up to 200 users in one request (rows answer by user id, or by username when refused)",
					props("users!:UserImport[]"), bulkResults)},
		}},
		{tag: "Licenses", access: accessOwner, rows: []row{
			{post, "/api/apps/:appId/licenses/add-time", "licenses:update", auditBulk("licenses"), h.apps.addTimeLicenses,
				op("Add seconds to the duration of every unused license (at most 10,000; keys without a duration are skipped)",
					props("seconds!:integer"), props("action!:string", "succeeded!:integer", "failed!:integer", "skipped!:integer", "results!:BulkResult[]"))},
			{post, "/api/apps/:appId/licenses/import", "licenses:create", auditBulkOneWrite("licenses"), h.apps.importLicenses,
				op("Import up to 1000 keys made elsewhere, each with its terms (rows answer by key; an existing or repeated key is its row's CONFLICT)",
					props("licenses!:LicenseImport[]"), bulkResults)},
		}},
		{tag: "Integrations", access: accessOwner, rows: []row{
			{get, "/api/apps/:appId/integrations/:integrationId/deliveries/:deliveryId", "integrations:read", notAudited, h.integrations.delivery,
				op("One delivery: the event's payload, its state and attempt count (finished deliveries are removed after a while)", noBody, ref("Delivery"))},
			{post, "/api/apps/:appId/integrations/:integrationId/deliveries/:deliveryId/redeliver", "integrations:update", auditCommand("integrations"),
				h.integrations.redeliver, op("Send a delivery again, now, to the integration's URL of this moment", noBody, ref("Delivery"))},
		}},
	}
}

// auditBulk audits a bulk command on records of one type: one entry, every record's
// before and after keyed by its id, stored in parts with each record's write (auditRow).
func auditBulk(record string) Audit { return Audit{Action: AuditCommand, Record: record, Bulk: true} }

// auditBulkOneWrite audits a bulk command whose records are all changed by one store call
// (all or none): its one entry goes with that write, as a single change's does.
func auditBulkOneWrite(record string) Audit {
	return Audit{Action: AuditCommand, Record: record, Bulk: true, OneWrite: true}
}
