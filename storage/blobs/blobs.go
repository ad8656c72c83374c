package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Store keeps file bytes by key. Keys are chosen by the caller (app id + file id).
// Implementations are safe for concurrent use.
type Store interface {
	// Put streams r into key, answering the byte count and the SHA-256 (hex) of what was
	// written. Nothing is visible under key until Put returns nil; on any error (read error
	// of r, ctx cancelled, size over max) nothing is left behind. maxBytes > 0 caps the size:
	// beyond it Put fails with ErrTooLarge. An existing key is replaced atomically.
	Put(ctx context.Context, key string, r io.Reader, maxBytes int64) (size int64, sha256hex string, err error)
	// Open answers a reader of the bytes and their size; ErrNotFound when absent.
	// The reader may be bound to ctx (GridFS reads lazily), so ctx must outlive it;
	// the caller closes it.
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Delete removes key; no error when absent.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every key starting with prefix (an application's files when it
	// is deleted), answering how many. The match is on the string, so "app1" also matches
	// "app10/x": pass "app1/" to mean one application.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
}

var (
	// ErrNotFound answers Open for a key that holds nothing.
	ErrNotFound = errors.New("blobs: not found")
	// ErrTooLarge answers Put when the reader yields more than maxBytes.
	ErrTooLarge = errors.New("blobs: too large")
	// ErrInvalidKey answers any call with a key or prefix that ValidKey or ValidPrefix
	// refuses; callers map it to a client error, never to a server fault.
	ErrInvalidKey = errors.New("blobs: invalid key")
)

const (
	// MaxKeyLen is the longest accepted key or prefix, in bytes.
	MaxKeyLen = 256
	// MaxSegmentLen is the longest accepted "/"-separated segment of a key, in bytes, so
	// that a segment plus an engine's suffix fits any file system's name limit (255
	// bytes on Linux file systems, about 143 on encrypted ones).
	MaxSegmentLen = 128
)

// ValidKey reports why key cannot name a blob, as an error wrapping ErrInvalidKey, or nil.
//
// A key is 1 to MaxKeyLen characters of [A-Za-z0-9._/-], split by "/" into non-empty
// segments of at most MaxSegmentLen: no leading or trailing "/", no "//", no "..", and no
// segment starting with ".". The rules make every key a safe relative path on any file system (no escape from
// the engine's root, no "a/./b" alias of "a/b" that GridFS would store apart), and keep
// dot-names free for engines' own files (fsblobs' ".tmp-*" uploads).
func ValidKey(key string) error {
	if strings.HasSuffix(key, "/") {
		return invalid(key, "ends with /")
	}
	return check(key)
}

// ValidPrefix is ValidKey for DeletePrefix: the same rules, except that a prefix may end
// with "/" ("app1/" names one application's keys). The empty prefix is refused, so that
// a bug in the caller cannot wipe every blob.
func ValidPrefix(prefix string) error {
	return check(strings.TrimSuffix(prefix, "/"))
}

func check(s string) error {
	if s == "" {
		return invalid(s, "is empty")
	}
	if len(s) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKey, len(s), MaxKeyLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == '/' || c == '-') {
			return invalid(s, fmt.Sprintf("has character %q (only A-Z a-z 0-9 . _ / - are allowed)", c))
		}
	}
	if strings.Contains(s, "..") {
		return invalid(s, "contains ..")
	}
	for seg := range strings.SplitSeq(s, "/") {
		switch {
		case seg == "":
			return invalid(s, "has an empty segment (leading / or //)")
		case seg[0] == '.':
			return invalid(s, "has a segment starting with .")
		case len(seg) > MaxSegmentLen:
			return fmt.Errorf("%w: a segment of %d bytes, more than %d", ErrInvalidKey, len(seg), MaxSegmentLen)
		}
	}
	return nil
}

func invalid(s, why string) error {
	return fmt.Errorf("%w: %q %s", ErrInvalidKey, s, why)
}
