// Package files owns an application's files (SPEC 4.7): uploads streamed into a blob store
// (the data dir, or GridFS so every node serves them) with their SHA-256 computed on the
// way, records with name and version, downloads, renames and deletes. Bytes are never held
// whole in memory. An upload is two steps, Stage (the bytes) then Commit (the record), so
// that a request refused after its bytes arrived is undone with Discard and changes nothing.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
)

// Bounds of file metadata.
const (
	MaxNameLength    = 255
	MaxVersionLength = 32
)

// AppAccess checks that the caller owns the app (apps.Service).
type AppAccess interface {
	GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// Service runs the file flows.
type Service struct {
	store    storage.FileStore
	blobs    blobs.Store
	apps     AppAccess
	bus      events.Publisher
	maxBytes int64
	now      func() time.Time
}

// New builds the service; maxBytes caps one upload.
func New(store storage.FileStore, blobStore blobs.Store, access AppAccess, bus events.Publisher, maxBytes int64, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, blobs: blobStore, apps: access, bus: bus, maxBytes: maxBytes, now: now}
}

// MaxBytes is the upload limit.
func (s *Service) MaxBytes() int64 { return s.maxBytes }

func checkName(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return core.Invalid(field, "%s must not be empty", field)
	}
	if len([]rune(v)) > MaxNameLength || strings.ContainsAny(v, "\x00\r\n\"\\/") {
		return core.Invalid(field, "%s must be at most %d characters without quotes, slashes or line breaks", field, MaxNameLength)
	}
	return nil
}

func checkVersion(v string) error {
	if len(v) > MaxVersionLength {
		return core.Invalid("version", "version must be at most %d characters", MaxVersionLength)
	}
	return nil
}

// Staged is a file whose bytes are stored but which has no record yet: nothing lists,
// serves or announces it. The caller ends it with Commit or Discard, so that a request
// refused after its bytes arrived (a later part of the same upload is bad) leaves nothing.
type Staged struct {
	id, appID, key string
	size           int64
	sum            string
}

// DefaultVersion is the version of a file uploaded without one.
const DefaultVersion = "1.0.0"

// Stage checks that the caller owns the app, then streams body into the blob store under a
// new id. A body that fails to read (the client's request ended early) answers an error
// wrapping the read error, so the caller can tell it from a fault of the store.
func (s *Service) Stage(ctx context.Context, o apps.Owner, appID string, body io.Reader) (Staged, error) {
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return Staged{}, err
	}
	id := uuid.NewString()
	key := appID + "/" + id
	size, sum, err := s.blobs.Put(ctx, key, body, s.maxBytes)
	if errors.Is(err, blobs.ErrTooLarge) {
		return Staged{}, core.E(core.CodeTooLarge, "the file exceeds the upload limit of %d bytes", s.maxBytes)
	} else if err != nil {
		return Staged{}, fmt.Errorf("files: store bytes: %w", err)
	}
	return Staged{id: id, appID: appID, key: key, size: size, sum: sum}, nil
}

// Commit records a staged file under its name and version (DefaultVersion when empty) and
// announces it. On an error the bytes stay staged: the caller discards them.
func (s *Service) Commit(ctx context.Context, st Staged, name, version, contentType string) (storage.File, error) {
	if version == "" {
		version = DefaultVersion
	}
	if err := core.FirstError(checkName("name", name), checkVersion(version)); err != nil {
		return storage.File{}, err
	}
	now := storage.Truncate(s.now())
	f := storage.File{ID: st.id, AppID: st.appID, Name: name, Version: version, Size: st.size, SHA256: st.sum, BlobKey: st.key,
		ContentType: contentType, CreatedAt: now, UpdatedAt: now}
	octx, ch := events.Begin(ctx, s.bus)
	ch.Add(fileEvent(st.appID, events.FileUpload, f))
	audit.Created(ctx, f) // its audit entry goes with the write, as its event
	if err := s.store.CreateFile(octx, f); err != nil {
		return storage.File{}, fmt.Errorf("files: record: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.File{}, err
	}
	return f, nil
}

// Discard removes a staged file's bytes. It runs even when ctx is cancelled (the client
// went away mid-request): the bytes must not outlive the refused request. Should the
// delete fail, the bytes are unreferenced and go with the app's (DeleteAppFiles).
func (s *Service) Discard(ctx context.Context, st Staged) {
	if st.key == "" {
		return
	}
	_ = s.blobs.Delete(context.WithoutCancel(ctx), st.key)
}

// List answers the app's files, newest first.
func (s *Service) List(ctx context.Context, o apps.Owner, appID string) ([]storage.File, error) {
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	return s.store.ListFiles(ctx, appID)
}

func (s *Service) file(ctx context.Context, o apps.Owner, appID, id string) (storage.File, error) {
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return storage.File{}, err
	}
	f, err := s.store.GetFile(ctx, appID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.File{}, core.E(core.CodeNotFound, "file not found")
	}
	return f, err
}

// Open answers a file record and a reader of its bytes; the caller closes the reader.
func (s *Service) Open(ctx context.Context, o apps.Owner, appID, id string) (storage.File, io.ReadCloser, error) {
	f, err := s.file(ctx, o, appID, id)
	if err != nil {
		return storage.File{}, nil, err
	}
	r, _, err := s.blobs.Open(ctx, f.BlobKey)
	if errors.Is(err, blobs.ErrNotFound) {
		return storage.File{}, nil, core.E(core.CodeNotFound, "the file's bytes are missing")
	} else if err != nil {
		return storage.File{}, nil, fmt.Errorf("files: open bytes: %w", err)
	}
	return f, r, nil
}

// Update renames a file or changes its version.
func (s *Service) Update(ctx context.Context, o apps.Owner, appID, id string, name, version *string) (storage.File, error) {
	if name == nil && version == nil {
		return storage.File{}, core.Invalid("name", "give name, version or both")
	}
	if name != nil {
		if err := checkName("name", *name); err != nil {
			return storage.File{}, err
		}
	}
	if version != nil {
		if err := core.FirstError(checkVersion(*version), core.Required("version", *version)); err != nil {
			return storage.File{}, err
		}
	}
	if _, err := s.file(ctx, o, appID, id); err != nil {
		return storage.File{}, err
	}
	octx, ch := events.Begin(ctx, s.bus)
	f, err := s.store.UpdateFile(octx, appID, id, audit.Track(ctx, func(f *storage.File) error {
		if name != nil {
			f.Name = *name
		}
		if version != nil {
			f.Version = *version
		}
		f.UpdatedAt = storage.Truncate(s.now())
		ch.Set(fileEvent(appID, events.FileUpdate, *f))
		return nil
	}))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.File{}, core.E(core.CodeNotFound, "file not found")
	} else if err != nil {
		return storage.File{}, err
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.File{}, err
	}
	return f, nil
}

// Delete removes the record, then the bytes.
func (s *Service) Delete(ctx context.Context, o apps.Owner, appID, id string) error {
	f, err := s.file(ctx, o, appID, id)
	if err != nil {
		return err
	}
	octx, ch := events.Begin(ctx, s.bus)
	ch.Add(fileEvent(appID, events.FileDelete, f))
	if err := s.store.DeleteFile(octx, appID, id); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return core.E(core.CodeNotFound, "file not found")
		}
		return err
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	if err := s.blobs.Delete(ctx, f.BlobKey); err != nil {
		return fmt.Errorf("files: delete bytes: %w", err)
	}
	return nil
}

// DeleteAppFiles removes the bytes of every file of an app (called when the app is deleted).
func (s *Service) DeleteAppFiles(ctx context.Context, appID string) error {
	_, err := s.blobs.DeletePrefix(ctx, appID+"/")
	return err
}

// fileEvent is the event of a change of f, stored with the change (events.Change).
func fileEvent(appID string, name events.Type, f storage.File) events.Event {
	return events.Event{Name: name, AppID: appID, Message: fmt.Sprintf("file %s %s", f.Name, f.Version),
		Data: map[string]any{"fileId": f.ID, "name": f.Name, "version": f.Version, "size": f.Size, "sha256": f.SHA256}}
}
