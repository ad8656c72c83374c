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

// bodyReader remembers the first read error of the request body, so that an upload that
// fails because the client's body ended early (or broke off) is answered as the client's
// fault, not as a fault of the blob store that was reading it.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

// badBody answers the error of a multipart body that could not be read: too large, too
// slow (the body reader's own refusal, REQUEST_TIMEOUT), or cut short or malformed.
func (h *fileHandlers) badBody(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return core.E(core.CodeTooLarge, "the file exceeds the upload limit of %d bytes", h.svc.MaxBytes())
	}
	if errors.Is(err, errBodyTimeout) {
		return errBodyTimeout
	}
	return core.Invalid("body", "malformed multipart body: it ends early or breaks the multipart format")
}

// upload streams the multipart part named "file" straight into the blob store; "name" and
// "version" fields may come before or after it. The file is recorded only once the whole
// body has been read and found good: any refusal (a second file part, a bad field, a body
// cut short) discards the staged bytes, so a refused upload leaves nothing behind.
func (h *fileHandlers) upload(c *gin.Context) {
	mr, err := c.Request.MultipartReader()
	if err != nil {
		fail(c, core.Invalid("file", "send multipart/form-data with a file field"))
		return
	}
	var (
		name, version, contentType, fileName string
		staged                               *files.Staged
	)
	refuse := func(err error) {
		if staged != nil {
			h.svc.Discard(c.Request.Context(), *staged)
		}
		fail(c, err)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			refuse(h.badBody(err))
			return
		}
		switch part.FormName() {
		case "name", "version":
			v, err := readField(part, part.FormName())
			if err != nil {
				var de *core.Error
				if !errors.As(err, &de) {
					err = h.badBody(err)
				}
				refuse(err)
				return
			}
			if part.FormName() == "name" {
				name = v
			} else {
				version = v
			}
		case "file":
			if staged != nil {
				refuse(core.Invalid("file", "send one file per upload"))
				return
			}
			body := &bodyReader{r: part}
			st, err := h.svc.Stage(c.Request.Context(), ownerOf(c), c.Param("appId"), body)
			if err != nil {
				if body.err != nil && core.CodeOf(err) == "" {
					err = h.badBody(body.err)
				}
				refuse(err)
				return
			}
			staged, fileName, contentType = &st, part.FileName(), part.Header.Get("Content-Type")
		}
		_ = part.Close()
	}
	if staged == nil {
		fail(c, core.Invalid("file", "file is required"))
		return
	}
	if name == "" {
		name = fileName
	}
	f, err := h.svc.Commit(c.Request.Context(), *staged, name, version, contentType)
	if err != nil {
		refuse(err)
		return
	}
	ok(c, http.StatusCreated, fileOf(f))
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
