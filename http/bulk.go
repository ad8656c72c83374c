package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
)

// Bounds of the bulk routes: one request acts on at most this many records, so that one
// answer (and its one audit entry) stays a bounded size.
const (
	maxBulkUsers       = 1000
	maxAddTimeLicenses = 10000
)

// The actions of POST /api/apps/:appId/users/bulk.
const (
	bulkBan       = "ban"
	bulkUnban     = "unban"
	bulkExtend    = "extend"
	bulkResetHWID = "reset-hwid"
	bulkDelete    = "delete"
)

// bulkRowResult is one record's outcome in a bulk answer: ok, or the error envelope's
// code and message it would have had alone.
type bulkRowResult struct {
	ID    string       `json:"id"`
	OK    bool         `json:"ok"`
	Error *errorObject `json:"error,omitempty"`
}

// bulkAnswer is the data of a bulk route: every row's outcome, in the order asked.
type bulkAnswer struct {
	Action    string          `json:"action"`
	Succeeded int             `json:"succeeded"`
	Failed    int             `json:"failed"`
	Results   []bulkRowResult `json:"results"`
}

func (a *bulkAnswer) add(id string, err error) {
	if err == nil {
		a.Succeeded++
		a.Results = append(a.Results, bulkRowResult{ID: id, OK: true})
		return
	}
	de := toDomain(err)
	a.Failed++
	a.Results = append(a.Results, bulkRowResult{ID: id, Error: &errorObject{Code: de.Code, Message: de.Message, Field: de.Field}})
}

// goneRecord is what the audit entry of a bulk deletion holds for each record: deleted
// false before, true after (a deletion has no after record of its own).
type goneRecord struct {
	ID      string
	Deleted bool
}

// bulkUsers serves POST /api/apps/:appId/users/bulk: one action (ban, unban, extend,
// reset-hwid, delete) on up to maxBulkUsers users named by id, or on every expired user
// (filter "expired", at most maxBulkUsers of them). Each user is acted on as its own
// route would; a refusal of one is its row's error and does not stop the others. The one
// audit entry holds each changed user's before and after.
func (h *appHandlers) bulkUsers(c *gin.Context) {
	var in struct {
		Action    string   `json:"action"`
		IDs       []string `json:"ids"`
		Filter    string   `json:"filter"`
		Duration  *int64   `json:"duration"`
		BanReason string   `json:"banReason"`
	}
	if !bind(c, &in) {
		return
	}
	ctx, o, appID := c.Request.Context(), ownerOf(c), c.Param("appId")
	switch in.Action {
	case bulkBan, bulkUnban, bulkExtend, bulkResetHWID, bulkDelete:
	default:
		fail(c, core.Invalid("action", "action must be one of ban, unban, extend, reset-hwid, delete"))
		return
	}
	if in.Action == bulkExtend && (in.Duration == nil || *in.Duration < 1) {
		fail(c, core.Invalid("duration", "duration (seconds, above 0) is required to extend"))
		return
	}
	// The app is the caller's, or nothing is done (404, as every route of the app).
	if _, _, _, err := h.svc.ListUsers(ctx, o, appID, apps.UserQueryInput{Page: storage.Page{Limit: 1}}); err != nil {
		fail(c, err)
		return
	}
	ids, err := h.bulkUserIDs(c, o, appID, in.IDs, in.Filter)
	if err != nil {
		fail(c, err)
		return
	}
	out := bulkAnswer{Action: in.Action, Results: make([]bulkRowResult, 0, len(ids))}
	for _, id := range ids {
		// Each user's write stores its part of the request's audit entry (auditRow).
		rctx, end := auditRow(ctx)
		var err error
		switch in.Action {
		case bulkBan, bulkUnban:
			banned := in.Action == bulkBan
			upd := apps.UpdateUserInput{Banned: &banned}
			if banned {
				upd.BanReason = &in.BanReason
			}
			_, err = h.svc.UpdateUser(rctx, o, appID, id, upd)
		case bulkExtend:
			_, err = h.svc.ExtendUser(rctx, o, appID, id, in.Duration)
		case bulkResetHWID:
			_, _, err = h.svc.ResetHWID(rctx, o, appID, id)
		case bulkDelete:
			// Handed over before the deletion, whose write takes it (a failed one
			// stores nothing, and end drops it).
			audit.Changed(rctx, goneRecord{ID: id}, goneRecord{ID: id, Deleted: true})
			err = h.svc.DeleteUser(rctx, o, appID, id)
		}
		end(err)
		if isOutage(err) {
			// The store is away: the rows not yet done would fail alike; the audit entry
			// of what was done is still written with the answer.
			fail(c, err)
			return
		}
		out.add(id, err)
	}
	ok(c, http.StatusOK, out)
}

// bulkUserIDs answers the users a bulk action is on: the ids given (deduplicated, order
// kept) or the expired users, never more than maxBulkUsers.
func (h *appHandlers) bulkUserIDs(c *gin.Context, o apps.Owner, appID string, ids []string, filter string) ([]string, error) {
	switch {
	case len(ids) > 0 && filter != "":
		return nil, core.Invalid("filter", "give ids or a filter, not both")
	case filter == "expired":
		var out []string
		p := storage.Page{Limit: storage.MaxPageSize}
		for {
			list, total, _, err := h.svc.ListUsers(c.Request.Context(), o, appID, apps.UserQueryInput{Expired: "true", SortBy: "created_at", SortOrder: "asc", Page: p})
			if err != nil {
				return nil, err
			}
			if total > maxBulkUsers {
				return nil, core.Invalid("filter", "%d users are expired; a bulk action takes at most %d: act on them by id in parts", total, maxBulkUsers)
			}
			for _, u := range list {
				out = append(out, u.ID)
			}
			p.Offset += len(list)
			if len(list) == 0 || p.Offset >= total {
				return out, nil
			}
		}
	case filter != "":
		return nil, core.Invalid("filter", "filter must be \"expired\"")
	case len(ids) == 0:
		return nil, core.Invalid("ids", "give the ids of the users (at most %d) or filter \"expired\"", maxBulkUsers)
	case len(ids) > maxBulkUsers:
		return nil, core.Invalid("ids", "at most %d users per request (%d given)", maxBulkUsers, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
}

// addTimeLicenses serves POST /api/apps/:appId/licenses/add-time: adds seconds to the
// duration of every unused license of the app (a key's time starts at its activation, so
// an unused key's time is its duration). Keys without a duration (no limit) are left as
// they are and answered as skipped. At most maxAddTimeLicenses keys per request.
func (h *appHandlers) addTimeLicenses(c *gin.Context) {
	var in struct {
		Seconds *int64 `json:"seconds"`
	}
	if !bind(c, &in) {
		return
	}
	if in.Seconds == nil || *in.Seconds < 1 {
		fail(c, core.Invalid("seconds", "seconds (above 0) is required"))
		return
	}
	ctx, o, appID := c.Request.Context(), ownerOf(c), c.Param("appId")
	var unused []storage.License
	p := storage.Page{Limit: storage.MaxPageSize}
	for {
		list, total, _, err := h.svc.ListLicenses(ctx, o, appID, apps.LicenseQueryInput{Used: "false", SortBy: "created_at", SortOrder: "asc", Page: p})
		if err != nil {
			fail(c, err)
			return
		}
		if total > maxAddTimeLicenses {
			fail(c, core.Invalid("seconds", "%d unused keys; add-time takes at most %d at once", total, maxAddTimeLicenses))
			return
		}
		unused = append(unused, list...)
		p.Offset += len(list)
		if len(list) == 0 || p.Offset >= total {
			break
		}
	}
	out := struct {
		bulkAnswer
		Skipped int `json:"skipped"`
	}{bulkAnswer: bulkAnswer{Action: "add-time", Results: make([]bulkRowResult, 0, len(unused))}}
	for _, l := range unused {
		if l.Duration == 0 {
			out.Skipped++
			continue
		}
		d := l.Duration + *in.Seconds
		rctx, end := auditRow(ctx) // the key's write stores its part of the entry
		_, err := h.svc.UpdateLicense(rctx, o, appID, l.ID, apps.UpdateLicenseInput{Duration: &d})
		end(err)
		if isOutage(err) {
			fail(c, err)
			return
		}
		out.add(l.ID, err)
	}
	ok(c, http.StatusOK, out)
}

// isOutage reports an error that is the server's, not the record's (a store away).
func isOutage(err error) bool {
	if err == nil {
		return false
	}
	code := toDomain(err).Code
	return code == core.CodeUnavailable || code == core.CodeInternal
}

// describeBulkChanges puts into e every changed record's members that differ, as one JSON
// object per side keyed by record id: {"id": {...}, ...}.
func describeBulkChanges(e *storage.AuditEntry, list []audit.Change) error {
	if len(list) == 0 {
		return nil
	}
	before, after := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	var errs []error
	for _, ch := range list {
		b, a, err := audit.Diff(ch.Before, ch.After)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if b == "" {
			b = "null" // a creation (audit.Created): nothing before
		}
		id := recordIDOf(ch.After)
		before[id], after[id] = json.RawMessage(b), json.RawMessage(a)
	}
	e.Before, e.After = jsonOf(before), jsonOf(after)
	return errors.Join(errs...)
}

// maxUserImport bounds the users one import request creates (each password is hashed).
const maxUserImport = 200

// userImportRow is one user of an import: the members of POST users.
type userImportRow struct {
	Username    string          `json:"username"`
	Password    string          `json:"password"`
	Email       string          `json:"email,omitempty"`
	Level       *int            `json:"level,omitempty"`
	ExpiresAt   *string         `json:"expiresAt,omitempty"`
	DeviceLimit *int            `json:"deviceLimit,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// licenseImportRow is one key of an import with its terms.
type licenseImportRow struct {
	Key      string `json:"key"`
	Level    *int   `json:"level,omitempty"`
	MaxUses  *int   `json:"maxUses,omitempty"`
	Duration *int64 `json:"duration,omitempty"`
	Note     string `json:"note,omitempty"`
}

// importUsers serves POST /api/apps/:appId/users/import: up to maxUserImport users, each
// created as POST users would (the plan's user limit holds); a refused row is its error.
func (h *appHandlers) importUsers(c *gin.Context) {
	var in struct {
		Users []userImportRow `json:"users"`
	}
	if !bind(c, &in) {
		return
	}
	if len(in.Users) == 0 || len(in.Users) > maxUserImport {
		fail(c, core.Invalid("users", "import 1 to %d users per request (%d given)", maxUserImport, len(in.Users)))
		return
	}
	ctx, o, appID := c.Request.Context(), ownerOf(c), c.Param("appId")
	if _, _, _, err := h.svc.ListUsers(ctx, o, appID, apps.UserQueryInput{Page: storage.Page{Limit: 1}}); err != nil {
		fail(c, err)
		return
	}
	out := bulkAnswer{Action: "import", Results: make([]bulkRowResult, 0, len(in.Users))}
	for _, r := range in.Users {
		// The user's creation stores its part of the request's audit entry (auditRow:
		// its id and username, audit.Made).
		rctx, end := auditRow(ctx)
		u, err := h.svc.CreateUser(rctx, o, appID, apps.CreateUserInput{Username: r.Username, Password: r.Password, Email: r.Email,
			Level: r.Level, ExpiresAt: r.ExpiresAt, DeviceLimit: r.DeviceLimit, Metadata: r.Metadata})
		if err == nil {
			audit.Changed(rctx, audit.Made{ID: u.ID}, audit.Made{ID: u.ID, Name: u.Username})
		}
		end(err)
		if isOutage(err) {
			fail(c, err)
			return
		}
		id := r.Username
		if err == nil {
			id = u.ID
		}
		out.add(id, err)
	}
	ok(c, http.StatusOK, out)
}

// importLicenses serves POST /api/apps/:appId/licenses/import: up to 1000 keys made
// elsewhere, each with its terms; rows answer by key.
func (h *appHandlers) importLicenses(c *gin.Context) {
	var in struct {
		Licenses []licenseImportRow `json:"licenses"`
	}
	if !bind(c, &in) {
		return
	}
	rows := make([]apps.ImportLicenseInput, len(in.Licenses))
	for i, r := range in.Licenses {
		rows[i] = apps.ImportLicenseInput{Key: r.Key, Level: r.Level, MaxUses: r.MaxUses, Duration: r.Duration, Note: r.Note}
	}
	ctx := c.Request.Context()
	res, err := h.svc.ImportLicenses(ctx, ownerOf(c), c.Param("appId"), rows)
	if err != nil {
		fail(c, err)
		return
	}
	// The service hands each imported key to the entry (audit.Made) before the one write
	// that makes them all, which stores the entry with them.
	out := bulkAnswer{Action: "import", Results: make([]bulkRowResult, 0, len(res))}
	for _, r := range res {
		out.add(r.Key, r.Err)
	}
	ok(c, http.StatusOK, out)
}
