package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/filecrypt"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
)

// MaxEncryptedFile is the largest file sent encrypted. The encryption's shuffle spans the
// whole body, so an encrypted download is built in memory; larger files are sent as plain
// bytes, which every SDK accepts (it decrypts only when X-File-Encrypted is 1).
const MaxEncryptedFile = 64 << 20

// fileKeyOf keeps what file downloads need of the application secret: HMAC midstates
// that derive the download keys, never the secret itself (see filecrypt).
func fileKeyOf(secret string) string {
	k, err := filecrypt.NewSecretKey(secret).MarshalText()
	if err != nil {
		return ""
	}
	return string(k)
}

// BlobOpener reads file bytes (blobs.Store).
type BlobOpener interface {
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
}

// Download is a file ready to send: Body holds the bytes to write (encrypted or not), or
// Reader streams plain bytes of a file too large to encrypt. The caller closes Reader.
type Download struct {
	File   storage.File
	Body   []byte
	Reader io.ReadCloser
	// Nonce is the lowercase hex X-File-Nonce of an encrypted body; "" when plain.
	Nonce string
}

// DownloadFile answers the newest file with the name, encrypted for this session when the
// app encrypts files and the client can decrypt (filecrypt.FormatFor).
func (s *Service) DownloadFile(ctx context.Context, call Call, name, userAgent string) (Download, error) {
	if name == "" {
		return Download{}, core.Invalid("name", "name is required (the file's name)")
	}
	if len(name) > 256 {
		return Download{}, core.Invalid("name", "name must be at most 256 characters")
	}
	f, err := s.d.Store.LatestFile(ctx, call.Snap.App.ID, name)
	if errors.Is(err, storage.ErrNotFound) {
		return Download{}, core.E(core.CodeNotFound, "no file named %q", name)
	}
	if err != nil {
		return Download{}, err
	}
	r, size, err := s.d.Blobs.Open(ctx, f.BlobKey)
	if errors.Is(err, blobs.ErrNotFound) {
		return Download{}, core.E(core.CodeNotFound, "the bytes of file %q are missing", name)
	}
	if err != nil {
		return Download{}, fmt.Errorf("open file bytes: %w", err)
	}
	if err := s.publish(ctx, events.Event{Name: events.FileDownload, AppID: f.AppID, Username: call.Session.Username, IP: call.Caller.IP,
		Country: call.Country, Level: events.LevelDebug, Message: "file " + f.Name + " downloaded",
		Data: map[string]any{"fileId": f.ID, "name": f.Name, "version": f.Version}}); err != nil {
		return Download{}, err
	}
	format := filecrypt.FormatFor(userAgent, call.Snap.EncryptFiles)
	key, keyErr := filecrypt.ParseSecretKey(call.Session.FileKey)
	if !format.Encrypted() || size > MaxEncryptedFile || keyErr != nil {
		return Download{File: f, Reader: r}, nil
	}
	defer r.Close()
	plain, err := io.ReadAll(io.LimitReader(r, MaxEncryptedFile+1))
	if err != nil {
		return Download{}, fmt.Errorf("read file bytes: %w", err)
	}
	nonce := filecrypt.NewNonce()
	body, err := filecrypt.Encrypt(key, call.Session.Token, nonce, plain, format)
	if err != nil {
		return Download{}, fmt.Errorf("encrypt file: %w", err)
	}
	return Download{File: f, Body: body, Nonce: filecrypt.NonceHex(nonce)}, nil
}
