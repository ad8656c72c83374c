package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// The REST helpers of SPEC 4.9. The gate has checked the app and the plan.

func (h *wsHandlers) online(c *gin.Context) {
	n, err := h.rt.Online(c.Request.Context(), c.Param("appId"))
	reply(c, http.StatusOK, gin.H{"count": n}, err)
}

func (h *wsHandlers) sessions(c *gin.Context) {
	list, err := h.rt.Sessions(c.Request.Context(), c.Param("appId"))
	reply(c, http.StatusOK, gin.H{"count": len(list), "sessions": list}, err)
}

func (h *wsHandlers) broadcast(c *gin.Context) {
	var in struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if !bind(c, &in) {
		return
	}
	n, err := h.rt.Broadcast(c.Request.Context(), c.Param("appId"), in.Message, in.Type)
	reply(c, http.StatusOK, gin.H{"sent": true, "onlineUsers": n}, err)
}

type wsReason struct {
	Reason string `json:"reason"`
}

func (h *wsHandlers) forceLogout(c *gin.Context) {
	var in wsReason
	if !bind(c, &in) {
		return
	}
	online, err := h.rt.ForceLogout(c.Request.Context(), c.Param("appId"), c.Param("userId"), in.Reason)
	reply(c, http.StatusOK, gin.H{"sent": online, "userId": c.Param("userId")}, err)
}

func (h *wsHandlers) kick(c *gin.Context) {
	var in wsReason
	if !bind(c, &in) {
		return
	}
	online, err := h.rt.Kick(c.Request.Context(), c.Param("appId"), c.Param("userId"), in.Reason)
	reply(c, http.StatusOK, gin.H{"sent": online, "userId": c.Param("userId")}, err)
}

func (h *wsHandlers) ban(c *gin.Context) {
	var in wsReason
	if !bind(c, &in) {
		return
	}
	err := h.rt.Ban(c.Request.Context(), c.Param("appId"), c.Param("userId"), in.Reason)
	reply(c, http.StatusOK, gin.H{"banned": true, "userId": c.Param("userId")}, err)
}

func (h *wsHandlers) chat(c *gin.Context) {
	var in struct {
		UserID  string `json:"userId"`
		Message string `json:"message"`
	}
	if !bind(c, &in) {
		return
	}
	online, err := h.rt.Chat(c.Request.Context(), c.Param("appId"), in.UserID, in.Message)
	reply(c, http.StatusOK, gin.H{"sent": online}, err)
}

func (h *wsHandlers) command(c *gin.Context) {
	var in struct {
		Command string         `json:"command"`
		UserID  string         `json:"userId"`
		Payload map[string]any `json:"payload"`
	}
	if !bind(c, &in) {
		return
	}
	n, err := h.rt.Command(c.Request.Context(), c.Param("appId"), in.UserID, in.Command, in.Payload)
	reply(c, http.StatusOK, gin.H{"sent": n > 0, "recipients": n}, err)
}

func (h *wsHandlers) push(c *gin.Context) {
	var in struct {
		UserID  string         `json:"userId"`
		Payload map[string]any `json:"payload"`
	}
	if !bind(c, &in) {
		return
	}
	n, err := h.rt.Push(c.Request.Context(), c.Param("appId"), in.UserID, in.Payload)
	reply(c, http.StatusOK, gin.H{"sent": n > 0, "recipients": n}, err)
}
