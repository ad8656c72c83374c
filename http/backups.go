package httpapi

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/internal/backup"
)

// Backups is what the admin backup routes need: the node's backup scheduler
// (internal/backup.Scheduler).
type Backups interface {
	TakeNow(ctx context.Context, manual bool) (backup.Result, error)
	List(ctx context.Context) ([]backup.Object, error)
	Open(ctx context.Context, name string) (io.ReadCloser, int64, error)
	Last() backup.Result
	Where() (dest string, every time.Duration, keep backup.Retention)
}

type backupHandlers struct{ svc Backups }

// backupSection is the administrators' backup routes (route_table.go adds it).
func backupSection(h *handlerSet) section {
	result := props("name:string", "size!:integer", "at!:date", "durationMs!:integer", "error:string", "manual!:boolean")
	item := props("name!:string", "size!:integer", "createdAt!:date")
	return section{tag: "Backups", access: accessAdmin, rows: []row{
		{get, "/api/admin/backups", "admin:read", notAudited, h.backups.list,
			op("The node's backups, newest first, the last result and the schedule (administrators)", noBody,
				obj{"type": "object", "required": []string{"backups", "last", "destination", "everySeconds", "keep", "maxAgeSeconds"},
					"properties": obj{"backups": obj{"type": "array", "items": item}, "last": nullable(result),
						"destination": typeOf("string"), "everySeconds": typeOf("integer"), "keep": typeOf("integer"), "maxAgeSeconds": typeOf("integer")}})},
		{post, "/api/admin/backups", "admin:update", auditCommand("account"), h.backups.take,
			created("Take a backup now (administrators; answers when it is stored)", noBody, result)},
		{get, "/api/admin/backups/:name", "admin:read", notAudited, h.backups.download,
			op("Download a backup (administrators)", noBody, nil).answers("application/gzip")},
	}}
}

func (h *backupHandlers) list(c *gin.Context) {
	if h.svc == nil {
		fail(c, core.E(core.CodeUnavailable, "backups are not set up on this node"))
		return
	}
	objs, err := h.svc.List(c.Request.Context())
	if err != nil {
		fail(c, core.E(core.CodeUnavailable, "the backup destination cannot be listed: %v", err))
		return
	}
	items := make([]gin.H, 0, len(objs))
	for _, o := range objs {
		items = append(items, gin.H{"name": o.Name, "size": o.Size, "createdAt": o.CreatedAt.UTC().Format(time.RFC3339Nano)})
	}
	dest, every, keep := h.svc.Where()
	var last any
	if r := h.svc.Last(); !r.At.IsZero() {
		last = resultView(r)
	}
	ok200(c, gin.H{"backups": items, "last": last, "destination": dest, "everySeconds": int64(every.Seconds()),
		"keep": keep.Keep, "maxAgeSeconds": int64(keep.MaxAge.Seconds())})
}

func resultView(r backup.Result) gin.H {
	v := gin.H{"size": r.Size, "at": r.At.UTC().Format(time.RFC3339Nano), "durationMs": r.Millis, "manual": r.Manual}
	if r.Name != "" {
		v["name"] = r.Name
	}
	if r.Error != "" {
		v["error"] = r.Error
	}
	return v
}

func (h *backupHandlers) take(c *gin.Context) {
	if h.svc == nil {
		fail(c, core.E(core.CodeUnavailable, "backups are not set up on this node"))
		return
	}
	// The backup outlives a client that goes away: it is stored and pruned either way.
	res, err := h.svc.TakeNow(context.WithoutCancel(c.Request.Context()), true)
	if err != nil {
		fail(c, core.E(core.CodeUnavailable, "the backup failed: %s", res.Error))
		return
	}
	ok(c, http.StatusCreated, resultView(res))
}

func (h *backupHandlers) download(c *gin.Context) {
	if h.svc == nil {
		fail(c, core.E(core.CodeUnavailable, "backups are not set up on this node"))
		return
	}
	name := c.Param("name")
	r, size, err := h.svc.Open(c.Request.Context(), name)
	if errors.Is(err, os.ErrNotExist) {
		fail(c, core.E(core.CodeNotFound, "no backup named %q", name))
		return
	}
	if err != nil {
		fail(c, core.E(core.CodeUnavailable, "the backup cannot be read: %v", err))
		return
	}
	defer r.Close()
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	c.DataFromReader(http.StatusOK, size, "application/gzip", r, nil)
}
