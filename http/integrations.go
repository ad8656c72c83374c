package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/storage"
)

// integrationHandlers serves webhook integrations (SPEC 4.8).
type integrationHandlers struct {
	svc *integrations.Service
}

type integrationView struct {
	ID         string   `json:"id"`
	AppID      string   `json:"appId"`
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	WebhookURL string   `json:"webhookUrl"`
	Events     []string `json:"events"`
	Enabled    bool     `json:"enabled"`
	// HasSecret says whether deliveries are signed (CUSTOM); the secret itself is shown
	// only when created or regenerated.
	HasSecret           bool    `json:"hasSecret"`
	Secret              string  `json:"secret,omitempty"`
	ConsecutiveFailures int     `json:"consecutiveFailures"`
	DisabledReason      string  `json:"disabledReason,omitempty"`
	CreatedAt           *string `json:"createdAt,omitempty"`
	UpdatedAt           *string `json:"updatedAt,omitempty"`
}

// integrationOf is the read form: the URL masked, no secret.
func integrationOf(i storage.Integration) integrationView {
	return integrationView{ID: i.ID, AppID: i.AppID, Name: i.Name, Type: i.Kind, WebhookURL: integrations.MaskURL(i.URL),
		Events: i.Events, Enabled: i.Enabled, HasSecret: i.Secret != "", ConsecutiveFailures: i.ConsecutiveFailures,
		DisabledReason: i.DisabledReason, CreatedAt: stamp(i.CreatedAt), UpdatedAt: stamp(i.UpdatedAt)}
}

func (h *integrationHandlers) events(c *gin.Context) {
	ok(c, http.StatusOK, integrations.EventNames)
}

func (h *integrationHandlers) list(c *gin.Context) {
	list, err := h.svc.List(c.Request.Context(), ownerOf(c), c.Param("appId"))
	reply(c, http.StatusOK, mapSlice(list, integrationOf), err)
}

func (h *integrationHandlers) get(c *gin.Context) {
	i, err := h.svc.Get(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"))
	reply(c, http.StatusOK, integrationOf(i), err)
}

func (h *integrationHandlers) create(c *gin.Context) {
	var in struct {
		Name       string   `json:"name"`
		Type       string   `json:"type"`
		WebhookURL string   `json:"webhookUrl"`
		Events     []string `json:"events"`
		Enabled    *bool    `json:"enabled"`
	}
	if !bind(c, &in) {
		return
	}
	i, err := h.svc.Create(c.Request.Context(), ownerOf(c), c.Param("appId"),
		integrations.Input{Name: in.Name, Type: in.Type, URL: in.WebhookURL, Events: in.Events, Enabled: in.Enabled})
	v := integrationOf(i)
	v.Secret = i.Secret // shown once, at creation
	reply(c, http.StatusCreated, v, err)
}

func (h *integrationHandlers) update(c *gin.Context) {
	var in struct {
		Name       *string  `json:"name"`
		WebhookURL *string  `json:"webhookUrl"`
		Events     []string `json:"events"`
		Enabled    *bool    `json:"enabled"`
	}
	if !bind(c, &in) {
		return
	}
	i, err := h.svc.Update(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"),
		integrations.UpdateInput{Name: in.Name, URL: in.WebhookURL, Events: in.Events, Enabled: in.Enabled})
	reply(c, http.StatusOK, integrationOf(i), err)
}

func (h *integrationHandlers) delete(c *gin.Context) {
	err := h.svc.Delete(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"))
	reply(c, http.StatusOK, gin.H{"message": "integration deleted"}, err)
}

func (h *integrationHandlers) test(c *gin.Context) {
	r, err := h.svc.Test(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"))
	data := gin.H{"message": r.Message, "delivered": r.Delivered, "statusCode": r.StatusCode,
		"latencyMs": r.Latency.Milliseconds()}
	if r.Error != "" {
		data["error"] = r.Error
	}
	reply(c, http.StatusOK, data, err)
}

func (h *integrationHandlers) regenerateSecret(c *gin.Context) {
	secret, err := h.svc.RegenerateSecret(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"))
	reply(c, http.StatusOK, gin.H{"secret": secret}, err)
}

type attemptView struct {
	ID         string  `json:"id"`
	DeliveryID string  `json:"deliveryId,omitempty"`
	Event      string  `json:"event"`
	Attempt    int     `json:"attempt"`
	Success    bool    `json:"success"`
	StatusCode int     `json:"statusCode"`
	LatencyMs  int64   `json:"latencyMs"`
	Error      string  `json:"error,omitempty"`
	Response   string  `json:"response,omitempty"`
	CreatedAt  *string `json:"createdAt,omitempty"`
}

func (h *integrationHandlers) deliveries(c *gin.Context) {
	p, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, err := h.svc.Attempts(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"), p)
	reply(c, http.StatusOK, gin.H{"attempts": mapSlice(list, func(a storage.DeliveryAttempt) attemptView {
		return attemptView{ID: a.ID, DeliveryID: a.DeliveryID, Event: a.Event, Attempt: a.Attempt, Success: a.Success,
			StatusCode: a.StatusCode, LatencyMs: a.Latency.Milliseconds(), Error: a.Error, Response: a.Response,
			CreatedAt: stamp(a.CreatedAt)}
	}), "total": total, "limit": p.Limit, "offset": p.Offset}, err)
}
