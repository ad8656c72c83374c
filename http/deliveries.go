package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/storage"
)

// deliveryView is one webhook delivery: the event sent (its payload as JSON), where it
// stands and how many attempts it took.
type deliveryView struct {
	ID            string          `json:"id"`
	IntegrationID string          `json:"integrationId"`
	EventID       string          `json:"eventId"`
	Event         string          `json:"event"`
	State         string          `json:"state"`
	Attempts      int             `json:"attempts"`
	NextAttemptAt *string         `json:"nextAttemptAt"`
	Payload       json.RawMessage `json:"payload"`
}

func viewOfDelivery(d storage.Delivery) deliveryView {
	payload := json.RawMessage("null")
	if json.Valid(d.Payload) {
		payload = d.Payload
	}
	return deliveryView{ID: d.ID, IntegrationID: d.IntegrationID, EventID: d.EventID, Event: d.Event, State: d.State,
		Attempts: d.Attempts, NextAttemptAt: stamp(d.NextAttemptAt), Payload: payload}
}

func (h *integrationHandlers) delivery(c *gin.Context) {
	d, err := h.svc.Delivery(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"), c.Param("deliveryId"))
	reply(c, http.StatusOK, viewOfDelivery(d), err)
}

func (h *integrationHandlers) redeliver(c *gin.Context) {
	d, err := h.svc.Redeliver(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"), c.Param("deliveryId"))
	reply(c, http.StatusOK, viewOfDelivery(d), err)
}
