package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/files"
	"github.com/keyward/keyward/storage"
)

const uploadRoute = "/api/apps/:appId/files"

// fileHandlers serves SPEC 4.7's files.
type fileHandlers struct {
	svc *files.Service
}

type fileView struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Version     string  `json:"version"`
	Size        int64   `json:"size"`
	Hash        string  `json:"hash"`
	ContentType string  `json:"contentType,omitempty"`
	CreatedAt   *string `json:"createdAt,omitempty"`
	UpdatedAt   *string `json:"updatedAt,omitempty"`
}

func fileOf(f storage.File) fileView {
	return fileView{ID: f.ID, Name: f.Name, Version: f.Version, Size: f.Size, Hash: f.SHA256, ContentType: f.ContentType,
		CreatedAt: stamp(f.CreatedAt), UpdatedAt: stamp(f.UpdatedAt)}
}

// readField reads a small multipart form field.
func readField(r io.Reader, name string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1025))
	if err != nil {
		return "", err
	}
	if len(b) > 1024 {
		return "", core.Invalid(name, "%s must be at most 1024 bytes", name)
	}
	return string(b), nil
}

// upload streams the multipart part named "file" straight into the blob store; "name" and
// "version" fields may come before or after it.
func (h *fileHandlers) upload(c *gin.Context) {
	mr, err := c.Request.MultipartReader()
	if err != nil {
		fail(c, core.Invalid("file", "send multipart/form-data with a file field"))
		return
	}
	var (
		name, version string
		uploaded      *storage.File
	)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				fail(c, core.E(core.CodeTooLarge, "the file exceeds the upload limit of %d bytes", h.svc.MaxBytes()))
				return
			}
			fail(c, core.Invalid("file", "malformed multipart body"))
			return
		}
		switch part.FormName() {
		case "name", "version":
			v, err := readField(part, part.FormName())
			if err != nil {
				fail(c, err)
				return
			}
			if part.FormName() == "name" {
				name = v
			} else {
				version = v
			}
		case "file":
			if uploaded != nil {
				fail(c, core.Invalid("file", "send one file per upload"))
				return
			}
			n := name
			if n == "" {
				n = part.FileName()
			}
			f, err := h.svc.Upload(c.Request.Context(), ownerOf(c), c.Param("appId"), files.Upload{Name: n, Version: version,
				ContentType: part.Header.Get("Content-Type"), Body: part})
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					err = core.E(core.CodeTooLarge, "the file exceeds the upload limit of %d bytes", h.svc.MaxBytes())
				}
				fail(c, err)
				return
			}
			uploaded = &f
		}
		_ = part.Close()
	}
	if uploaded == nil {
		fail(c, core.Invalid("file", "file is required"))
		return
	}
	// Fields sent after the file part apply now.
	if (name != "" && name != uploaded.Name) || (version != "" && version != uploaded.Version) {
		var np, vp *string
		if name != "" {
			np = &name
		}
		if version != "" {
			vp = &version
		}
		f, err := h.svc.Update(c.Request.Context(), ownerOf(c), c.Param("appId"), uploaded.ID, np, vp)
		if err != nil {
			fail(c, err)
			return
		}
		uploaded = &f
	}
	ok(c, http.StatusCreated, fileOf(*uploaded))
}

func (h *fileHandlers) list(c *gin.Context) {
	list, err := h.svc.List(c.Request.Context(), ownerOf(c), c.Param("appId"))
	reply(c, http.StatusOK, mapSlice(list, fileOf), err)
}

func (h *fileHandlers) download(c *gin.Context) {
	f, r, err := h.svc.Open(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("fileId"))
	if err != nil {
		fail(c, err)
		return
	}
	defer r.Close()
	ct := f.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	c.Header("X-File-Hash", f.SHA256)
	c.Header("X-File-Version", f.Version)
	c.DataFromReader(http.StatusOK, f.Size, ct, r, nil)
}

func (h *fileHandlers) update(c *gin.Context) {
	var in struct {
		Name    *string `json:"name"`
		Version *string `json:"version"`
	}
	if !bind(c, &in) {
		return
	}
	f, err := h.svc.Update(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("fileId"), in.Name, in.Version)
	reply(c, http.StatusOK, fileOf(f), err)
}

func (h *fileHandlers) delete(c *gin.Context) {
	err := h.svc.Delete(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("fileId"))
	reply(c, http.StatusOK, gin.H{"message": "file deleted"}, err)
}

func (h *fileHandlers) routes(one *gin.RouterGroup) {
	one.GET("/files", h.list)
	one.POST("/files", h.upload)
	one.GET("/files/:fileId/download", h.download)
	patchOrPut(one, "/files/:fileId", h.update)
	one.DELETE("/files/:fileId", h.delete)
}
