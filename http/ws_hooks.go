package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/wshooks"
	"github.com/keyward/keyward/hooks"
)

// wsHookHandlers serves the WebSocket hooks of an app (SPEC 4.9).
type wsHookHandlers struct {
	svc *wshooks.Service
}

type wsHookView struct {
	ID          string            `json:"id"`
	AppID       string            `json:"appId"`
	Name        string            `json:"name"`
	Event       string            `json:"event"`
	Description string            `json:"description"`
	Conditions  []hooks.Condition `json:"conditions"`
	Actions     []hooks.Action    `json:"actions"`
	Enabled     bool              `json:"enabled"`
	Priority    int               `json:"priority"`
	CreatedAt   *string           `json:"createdAt,omitempty"`
	UpdatedAt   *string           `json:"updatedAt,omitempty"`
}

func wsHookOf(h wshooks.Hook) wsHookView {
	return wsHookView{ID: h.ID, AppID: h.AppID, Name: h.Name, Event: h.Event, Description: h.Description,
		Conditions: h.Conditions, Actions: h.Actions, Enabled: h.Enabled, Priority: h.Priority,
		CreatedAt: stamp(h.CreatedAt), UpdatedAt: stamp(h.UpdatedAt)}
}

func (h *wsHookHandlers) list(c *gin.Context) {
	list, err := h.svc.List(c.Request.Context(), ownerOf(c), c.Param("appId"))
	views := mapSlice(list, wsHookOf)
	reply(c, http.StatusOK, gin.H{"count": len(views), "hooks": views}, err)
}

func (h *wsHookHandlers) create(c *gin.Context) {
	var in struct {
		Name        string            `json:"name"`
		Event       string            `json:"event"`
		Description string            `json:"description"`
		Conditions  []hooks.Condition `json:"conditions"`
		Actions     []hooks.Action    `json:"actions"`
		Enabled     *bool             `json:"enabled"`
		Priority    *int              `json:"priority"`
	}
	if !bind(c, &in) {
		return
	}
	hk, err := h.svc.Create(c.Request.Context(), ownerOf(c), c.Param("appId"), wshooks.CreateInput{Name: in.Name, Event: in.Event,
		Description: in.Description, Conditions: in.Conditions, Actions: in.Actions, Enabled: in.Enabled, Priority: in.Priority})
	reply(c, http.StatusCreated, wsHookOf(hk), err)
}

func (h *wsHookHandlers) update(c *gin.Context) {
	var in struct {
		Name        *string            `json:"name"`
		Event       *string            `json:"event"`
		Description *string            `json:"description"`
		Conditions  *[]hooks.Condition `json:"conditions"`
		Actions     *[]hooks.Action    `json:"actions"`
		Enabled     *bool              `json:"enabled"`
		Priority    *int               `json:"priority"`
	}
	if !bind(c, &in) {
		return
	}
	hk, err := h.svc.Update(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("hookId"), wshooks.UpdateInput{Name: in.Name,
		Event: in.Event, Description: in.Description, Conditions: in.Conditions, Actions: in.Actions, Enabled: in.Enabled, Priority: in.Priority})
	reply(c, http.StatusOK, wsHookOf(hk), err)
}

func (h *wsHookHandlers) delete(c *gin.Context) {
	err := h.svc.Delete(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("hookId"))
	reply(c, http.StatusOK, gin.H{"message": "hook deleted"}, err)
}
