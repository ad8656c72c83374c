package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/analytics"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/core/logs"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/core/variables"
	"github.com/keyward/keyward/storage"
)

// appDataHandlers serves variables (SPEC 4.6), rules (4.7) and logs (4.8).
type appDataHandlers struct {
	vars  *variables.Service
	rules *rules.Service
	logs  *logs.Service
}

type variableView struct {
	ID        string  `json:"id"`
	Key       string  `json:"key"`
	Value     string  `json:"value"`
	Type      string  `json:"type"`
	CreatedAt *string `json:"createdAt,omitempty"`
	UpdatedAt *string `json:"updatedAt,omitempty"`
}

func variableOf(v storage.Variable) variableView {
	return variableView{ID: v.ID, Key: v.Key, Value: v.Value, Type: v.Type, CreatedAt: stamp(v.CreatedAt), UpdatedAt: stamp(v.UpdatedAt)}
}

// flexibleValue accepts a variable value as a JSON string, or as a number, boolean, object
// or array (kept as its JSON text), so `"value": 5` and `"value": "5"` both work.
type flexibleValue struct{ s *string }

func (f *flexibleValue) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		f.s = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		f.s = &s
		return nil
	}
	text := string(b)
	f.s = &text
	return nil
}

type variableBody struct {
	Key   string        `json:"key"`
	Value flexibleValue `json:"value"`
	Type  *string       `json:"type"`
}

func (b variableBody) input() variables.Input {
	return variables.Input{Key: b.Key, Value: b.Value.s, Type: b.Type}
}

// target reads the scope of a variable route from its URL parameters.
func target(c *gin.Context) variables.Target {
	switch {
	case c.Param("userId") != "":
		return variables.Target{Scope: storage.ScopeUser, OwnerID: c.Param("userId")}
	case c.Param("licenseId") != "":
		return variables.Target{Scope: storage.ScopeLicense, OwnerID: c.Param("licenseId")}
	}
	return variables.Target{Scope: storage.ScopeApp}
}

func (h *appDataHandlers) listVariables(c *gin.Context) {
	list, err := h.vars.List(c.Request.Context(), ownerOf(c), c.Param("appId"), target(c))
	reply(c, http.StatusOK, mapSlice(list, variableOf), err)
}

func (h *appDataHandlers) createVariable(c *gin.Context) {
	var in variableBody
	if !bind(c, &in) {
		return
	}
	v, err := h.vars.Create(c.Request.Context(), ownerOf(c), c.Param("appId"), target(c), in.input())
	reply(c, http.StatusCreated, variableOf(v), err)
}

func (h *appDataHandlers) bulkVariables(c *gin.Context) {
	var in struct {
		Variables []variableBody `json:"variables"`
	}
	if !bind(c, &in) {
		return
	}
	inputs := make([]variables.Input, 0, len(in.Variables))
	for _, v := range in.Variables {
		inputs = append(inputs, v.input())
	}
	list, err := h.vars.CreateMany(c.Request.Context(), ownerOf(c), c.Param("appId"), target(c), inputs)
	reply(c, http.StatusCreated, gin.H{"variables": mapSlice(list, variableOf), "count": len(list)}, err)
}

func (h *appDataHandlers) updateVariable(c *gin.Context) {
	var in variableBody
	if !bind(c, &in) {
		return
	}
	v, err := h.vars.Update(c.Request.Context(), ownerOf(c), c.Param("appId"), target(c), c.Param("varId"), in.input())
	reply(c, http.StatusOK, variableOf(v), err)
}

func (h *appDataHandlers) deleteVariable(c *gin.Context) {
	err := h.vars.Delete(c.Request.Context(), ownerOf(c), c.Param("appId"), target(c), c.Param("varId"))
	reply(c, http.StatusOK, gin.H{"message": "variable deleted"}, err)
}

type ruleView struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	Action    string  `json:"action"`
	Value     string  `json:"value"`
	Note      string  `json:"note"`
	Enabled   bool    `json:"enabled"`
	Active    bool    `json:"active"`
	CreatedAt *string `json:"createdAt,omitempty"`
	UpdatedAt *string `json:"updatedAt,omitempty"`
}

func (h *appDataHandlers) ruleOf(r storage.Rule) ruleView {
	active := r.Enabled && (r.Type != rules.TypeCountry || h.rules.CountryRulesActive())
	return ruleView{ID: r.ID, Type: r.Type, Action: r.Action, Value: r.Value, Note: r.Note, Enabled: r.Enabled, Active: active,
		CreatedAt: stamp(r.CreatedAt), UpdatedAt: stamp(r.UpdatedAt)}
}

type ruleBody struct {
	Type    string `json:"type"`
	Action  string `json:"action"`
	Value   string `json:"value"`
	Note    string `json:"note"`
	Enabled *bool  `json:"enabled"`
}

func (b ruleBody) input() rules.Input {
	return rules.Input{Type: b.Type, Action: b.Action, Value: b.Value, Note: b.Note, Enabled: b.Enabled}
}

func (h *appDataHandlers) listRules(c *gin.Context) {
	list, err := h.rules.List(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("type"), c.Query("action"))
	reply(c, http.StatusOK, mapSlice(list, h.ruleOf), err)
}

func (h *appDataHandlers) createRule(c *gin.Context) {
	var in ruleBody
	if !bind(c, &in) {
		return
	}
	r, err := h.rules.Create(c.Request.Context(), ownerOf(c), c.Param("appId"), in.input())
	reply(c, http.StatusCreated, h.ruleOf(r), err)
}

func (h *appDataHandlers) bulkRules(c *gin.Context) {
	var in struct {
		Rules []ruleBody `json:"rules"`
	}
	if !bind(c, &in) {
		return
	}
	inputs := make([]rules.Input, 0, len(in.Rules))
	for _, r := range in.Rules {
		inputs = append(inputs, r.input())
	}
	list, err := h.rules.CreateMany(c.Request.Context(), ownerOf(c), c.Param("appId"), inputs, true)
	reply(c, http.StatusCreated, gin.H{"rules": mapSlice(list, h.ruleOf), "count": len(list)}, err)
}

func (h *appDataHandlers) updateRule(c *gin.Context) {
	var in struct {
		Value   *string `json:"value"`
		Note    *string `json:"note"`
		Enabled *bool   `json:"enabled"`
	}
	if !bind(c, &in) {
		return
	}
	r, err := h.rules.Update(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("ruleId"),
		rules.UpdateInput{Value: in.Value, Note: in.Note, Enabled: in.Enabled})
	reply(c, http.StatusOK, h.ruleOf(r), err)
}

func (h *appDataHandlers) deleteRule(c *gin.Context) {
	err := h.rules.Delete(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("ruleId"))
	reply(c, http.StatusOK, gin.H{"message": "rule deleted"}, err)
}

type logView struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Message   string          `json:"message"`
	Username  string          `json:"username"`
	IPAddress string          `json:"ipAddress"`
	Country   string          `json:"country,omitempty"`
	Level     string          `json:"level"`
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt *string         `json:"createdAt,omitempty"`
}

func logOf(e storage.LogEntry) logView {
	v := logView{ID: e.ID, Event: e.Event, Message: e.Message, Username: e.Username, IPAddress: e.IP, Country: e.Country,
		Level: e.Level, CreatedAt: stamp(e.CreatedAt)}
	if e.Data != "" {
		v.Data = json.RawMessage(e.Data)
	}
	return v
}

func (h *appDataHandlers) listLogs(c *gin.Context) {
	p, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, p, err := h.logs.List(c.Request.Context(), ownerOf(c), c.Param("appId"), logs.QueryInput{
		Event: c.Query("event"), Level: c.Query("level"), Username: c.Query("username"),
		StartDate: c.Query("startDate"), EndDate: c.Query("endDate"), Page: p})
	listReply(c, "logs", mapSlice(list, logOf), total, p, err)
}

func (h *appDataHandlers) logStats(c *gin.Context) {
	st, err := h.logs.Stats(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("hours"))
	if st.ByLevel == nil {
		st.ByLevel = map[string]int{}
	}
	if st.ByEvent == nil {
		st.ByEvent = map[string]int{}
	}
	reply(c, http.StatusOK, gin.H{"total": st.Total, "byLevel": st.ByLevel, "byEvent": st.ByEvent}, err)
}

func (h *appDataHandlers) logEvents(c *gin.Context) {
	names, err := h.logs.Events(c.Request.Context(), ownerOf(c), c.Param("appId"))
	reply(c, http.StatusOK, names, err)
}

func (h *appDataHandlers) purgeLogs(c *gin.Context) {
	n, err := h.logs.Purge(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("days"), askerOf(c))
	reply(c, http.StatusOK, gin.H{"deleted": n}, err)
}

// askerOf names who asked for a change stored as an intent (a logs purge): the scoped
// key's name, else the account's username, and the request's id.
func askerOf(c *gin.Context) logs.Asker {
	name := principal(c).Account.Username
	if k, ok := c.Get(ctxAPIKey); ok && k != nil {
		name = k.(*apikeys.Key).Name
	}
	return logs.Asker{Actor: name, RequestID: requestIDOf(c)}
}

// analyticsHandlers serves SPEC 4.8's analytics.
type analyticsHandlers struct {
	svc      *analytics.Service
	sessions clientSessions
}

func (h *analyticsHandlers) overview(c *gin.Context) {
	o, err := h.svc.Overview(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("period"))
	if err == nil {
		o.ActiveSessions = activeSessions(c, h.sessions, c.Param("appId"))
	}
	reply(c, http.StatusOK, gin.H{
		"period":   o.Period,
		"users":    gin.H{"total": o.Users, "new": o.NewUsers, "active": o.Active, "banned": o.Banned},
		"licenses": gin.H{"total": o.Licenses, "unused": o.UnusedLicenses},
		"sessions": gin.H{"active": o.ActiveSessions},
		"activity": gin.H{"logins": o.Logins, "failedLogins": o.FailedLogins, "registrations": o.Registrations},
	}, err)
}

func (h *analyticsHandlers) timeseries(c *gin.Context) {
	points, err := h.svc.Timeseries(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("period"), c.Query("event"))
	reply(c, http.StatusOK, mapSlice(points, func(p analytics.Point) gin.H {
		return gin.H{"bucket": p.Bucket.UTC().Format(timeFormat), "count": p.Count}
	}), err)
}

func (h *analyticsHandlers) geography(c *gin.Context) {
	list, err := h.svc.Geography(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("days"))
	reply(c, http.StatusOK, mapSlice(list, func(cc storage.CountryCount) gin.H {
		return gin.H{"country": cc.Country, "count": cc.Count}
	}), err)
}

func (h *analyticsHandlers) recent(c *gin.Context) {
	list, err := h.svc.Recent(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("limit"))
	reply(c, http.StatusOK, mapSlice(list, func(e storage.LogEntry) gin.H {
		return gin.H{"id": e.ID, "event": e.Event, "message": e.Message, "username": e.Username, "ipAddress": e.IP,
			"level": e.Level, "createdAt": stamp(e.CreatedAt)}
	}), err)
}
