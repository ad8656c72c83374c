package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/storage"
)

// deliveryView is one webhook delivery: the event queued (payload, as stored), the request
// its last attempt put on the wire (sent: exactly the header fields and body bytes the
// receiver got, signature and event id included; null until an attempt reached a
// receiver), where it stands and how many attempts it took.
type deliveryView struct {
	ID            string       `json:"id"`
	IntegrationID string       `json:"integrationId"`
	EventID       string       `json:"eventId"`
	Event         string       `json:"event"`
	State         string       `json:"state"`
	Attempts      int          `json:"attempts"`
	NextAttemptAt *string      `json:"nextAttemptAt"`
	LastError     *string      `json:"lastError"`
	Payload       *queuedEvent `json:"payload"`
	Sent          *sentView    `json:"sent"`
}

// queuedEvent is the event a delivery carries, as queued: the source of every attempt's
// request (which the integration's type then formats). null when the stored event cannot
// be read.
type queuedEvent struct {
	ID      string         `json:"id"`
	Event   string         `json:"event"`
	AppID   string         `json:"appId"`
	Time    *string        `json:"time,omitempty"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// sentView is a request as it went out. body is the bytes as text when they are UTF-8
// (every payload Keyward builds is), bodyEncoding "utf-8"; otherwise body is base64 and
// bodyEncoding "base64". The URL is not shown: its path holds chat platforms' tokens.
type sentView struct {
	Method       string       `json:"method"`
	Headers      []sentHeader `json:"headers"`
	Body         string       `json:"body"`
	BodyEncoding string       `json:"bodyEncoding"`
}

// sentHeader is one header field, in the order it was written.
type sentHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func viewOfSent(b []byte) *sentView {
	s := webhooks.DecodeSent(b)
	if s == nil {
		return nil
	}
	v := &sentView{Method: s.Method, Headers: make([]sentHeader, len(s.Headers)), BodyEncoding: "utf-8"}
	for i, h := range s.Headers {
		v.Headers[i] = sentHeader{Name: h.Name, Value: h.Value}
	}
	if text, ok := s.BodyText(); ok {
		v.Body = text
	} else {
		v.Body, v.BodyEncoding = base64.StdEncoding.EncodeToString(s.Body), "base64"
	}
	return v
}

func viewOfDelivery(d storage.Delivery) deliveryView {
	var payload *queuedEvent
	var e webhooks.Event
	if json.Unmarshal(d.Payload, &e) == nil {
		if e.Data == nil {
			e.Data = map[string]any{}
		}
		payload = &queuedEvent{ID: e.ID, Event: e.Name, AppID: e.AppID, Time: stamp(e.Time), Message: e.Message, Data: e.Data}
	}
	var lastError *string
	if d.LastError != "" {
		lastError = &d.LastError
	}
	return deliveryView{ID: d.ID, IntegrationID: d.IntegrationID, EventID: d.EventID, Event: d.Event, State: d.State,
		Attempts: d.Attempts, NextAttemptAt: stamp(d.NextAttemptAt), LastError: lastError, Payload: payload, Sent: viewOfSent(d.Sent)}
}

func (h *integrationHandlers) delivery(c *gin.Context) {
	d, err := h.svc.Delivery(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"), c.Param("deliveryId"))
	reply(c, http.StatusOK, viewOfDelivery(d), err)
}

func (h *integrationHandlers) redeliver(c *gin.Context) {
	d, err := h.svc.Redeliver(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("integrationId"), c.Param("deliveryId"))
	reply(c, http.StatusOK, viewOfDelivery(d), err)
}
