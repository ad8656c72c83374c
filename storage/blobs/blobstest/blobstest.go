package blobstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage/blobs"
)

const (
	// spillSize passes every engine's internal buffering (the GridFS driver sends chunks
	// in 16 MiB batches), so failures after it test the clean-up of bytes already
	// written, not just of a buffer in memory.
	spillSize = 17<<20 + 12345
	// bigSize is the streamed round trip of the suite: large enough to cross many chunks
	// and batches, small enough for the -race suite.
	bigSize = 50 << 20
	// emptySHA256 is the SHA-256 of zero bytes.
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// Data answers a reader of n deterministic pseudo-random bytes derived from seed: the same
// seed and n give the same bytes, generated as they are read (never held in memory).
func Data(seed uint64, n int64) io.Reader {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return io.LimitReader(rand.NewChaCha8(s), n)
}

// DataSHA256 answers the SHA-256 (hex) of Data(seed, n), computed by streaming it.
func DataSHA256(seed uint64, n int64) string {
	h := sha256.New()
	if _, err := io.CopyBuffer(h, Data(seed, n), make([]byte, 64<<10)); err != nil {
		panic(err) // Data cannot fail
	}
	return hex.EncodeToString(h.Sum(nil))
}

func dataBytes(seed uint64, n int) []byte {
	b, err := io.ReadAll(Data(seed, int64(n)))
	if err != nil {
		panic(err)
	}
	return b
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Run runs the conformance suite. newStore answers an empty store of its own for each
// case; it registers with t.Cleanup whatever must be released or checked afterwards.
func Run(t *testing.T, newStore func(t *testing.T) blobs.Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s blobs.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Empty", testEmpty},
		{"Replace", testReplace},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"DeleteAbsent", testDeleteAbsent},
		{"DeletePrefix", testDeletePrefix},
		{"NestedKeys", testNestedKeys},
		{"InvalidKeys", testInvalidKeys},
		{"LongestKey", testLongestKey},
		{"TooLarge", testTooLarge},
		{"TooLargeKeepsPrevious", testTooLargeKeepsPrevious},
		{"ExactlyMax", testExactlyMax},
		{"FailingReader", testFailingReader},
		{"CancelledMidway", testCancelledMidway},
		{"CancelledBefore", testCancelledBefore},
		{"ConcurrentPuts", testConcurrentPuts},
		{"ConcurrentPutsSameKey", testConcurrentPutsSameKey},
		{"DeadlineContext", testDeadlineContext},
		{"Big", testBig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newStore(t))
		})
	}
}

// put stores data under key and checks the answered size and hash.
func put(t *testing.T, s blobs.Store, key string, data []byte) {
	t.Helper()
	size, sum, err := s.Put(t.Context(), key, bytes.NewReader(data), 0)
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	if size != int64(len(data)) || sum != sumHex(data) {
		t.Fatalf("Put(%q) = %d, %s; want %d, %s", key, size, sum, len(data), sumHex(data))
	}
}

// read answers key's bytes, checking that the answered size matches them.
func read(t *testing.T, s blobs.Store, key string) []byte {
	t.Helper()
	rc, size, err := s.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer func() {
		if err := rc.Close(); err != nil {
			t.Errorf("Close reader of %q: %v", key, err)
		}
	}()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	if int64(len(b)) != size {
		t.Fatalf("Open(%q) answered size %d, read %d bytes", key, size, len(b))
	}
	return b
}

// wantContent checks that key holds exactly data.
func wantContent(t *testing.T, s blobs.Store, key string, data []byte) {
	t.Helper()
	got := read(t, s, key)
	if !bytes.Equal(got, data) {
		t.Fatalf("%q holds %d bytes (sha256 %s), want %d bytes (sha256 %s)",
			key, len(got), sumHex(got), len(data), sumHex(data))
	}
}

// wantAbsent checks that Open answers ErrNotFound for key.
func wantAbsent(t *testing.T, s blobs.Store, key string) {
	t.Helper()
	rc, _, err := s.Open(t.Context(), key)
	if err == nil {
		_ = rc.Close()
		t.Fatalf("Open(%q) succeeded, want ErrNotFound", key)
	}
	if !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("Open(%q) = %v, want ErrNotFound", key, err)
	}
}

func testRoundTrip(t *testing.T, s blobs.Store) {
	// Sizes around GridFS's 255 KiB chunk, and one over several chunks.
	for i, n := range []int{1, 1000, 255<<10 - 1, 255 << 10, 255<<10 + 1, 3<<20 + 7} {
		key := fmt.Sprintf("app1/file%d", i)
		data := dataBytes(uint64(i), n)
		put(t, s, key, data)
		wantContent(t, s, key, data)
	}
}

func testEmpty(t *testing.T, s blobs.Store) {
	size, sum, err := s.Put(t.Context(), "app1/empty", strings.NewReader(""), 10)
	if err != nil {
		t.Fatalf("Put empty: %v", err)
	}
	if size != 0 || sum != emptySHA256 {
		t.Fatalf("Put empty = %d, %s; want 0, %s", size, sum, emptySHA256)
	}
	wantContent(t, s, "app1/empty", []byte{})
}

func testReplace(t *testing.T, s blobs.Store) {
	first := dataBytes(1, 300<<10)
	second := dataBytes(2, 1000)
	put(t, s, "app1/f", first)
	put(t, s, "app1/f", second)
	wantContent(t, s, "app1/f", second)
	put(t, s, "app1/f", nil)
	wantContent(t, s, "app1/f", []byte{})
	put(t, s, "app1/f", first)
	wantContent(t, s, "app1/f", first)
}

func testNotFound(t *testing.T, s blobs.Store) {
	wantAbsent(t, s, "app1/never")
	put(t, s, "app1/other", []byte("x"))
	wantAbsent(t, s, "app1/never")
	wantAbsent(t, s, "app1/othe") // a prefix of a key is not a key
	wantAbsent(t, s, "app1")      // nor is a folder
}

func testDelete(t *testing.T, s blobs.Store) {
	put(t, s, "app1/a", []byte("aaa"))
	put(t, s, "app1/b", []byte("bbb"))
	if err := s.Delete(t.Context(), "app1/a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantAbsent(t, s, "app1/a")
	wantContent(t, s, "app1/b", []byte("bbb"))
	// The key can be used again.
	put(t, s, "app1/a", []byte("again"))
	wantContent(t, s, "app1/a", []byte("again"))
}

func testDeleteAbsent(t *testing.T, s blobs.Store) {
	if err := s.Delete(t.Context(), "app1/never"); err != nil {
		t.Fatalf("Delete of an absent key: %v", err)
	}
	put(t, s, "app1/a", []byte("a"))
	for range 2 {
		if err := s.Delete(t.Context(), "app1/a"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
}

func testDeletePrefix(t *testing.T, s blobs.Store) {
	keys := []string{"app1/f1", "app1/f2", "app1/sub/f3", "app1", "app10/f1", "app2/f1", "app2/g1"}
	for _, k := range keys {
		put(t, s, k, []byte(k))
	}
	deletePrefix := func(prefix string, want int) {
		t.Helper()
		n, err := s.DeletePrefix(t.Context(), prefix)
		if err != nil {
			t.Fatalf("DeletePrefix(%q): %v", prefix, err)
		}
		if n != want {
			t.Fatalf("DeletePrefix(%q) = %d, want %d", prefix, n, want)
		}
	}
	deletePrefix("app1/", 3)
	for _, k := range []string{"app1/f1", "app1/f2", "app1/sub/f3"} {
		wantAbsent(t, s, k)
	}
	for _, k := range []string{"app1", "app10/f1", "app2/f1", "app2/g1"} {
		wantContent(t, s, k, []byte(k))
	}
	deletePrefix("app1/", 0)
	deletePrefix("nothing/", 0)
	deletePrefix("nothing", 0)
	// The match is on the string: "app1" takes the key "app1" and app10's files.
	deletePrefix("app1", 2)
	wantAbsent(t, s, "app1")
	wantAbsent(t, s, "app10/f1")
	// A prefix may end inside a segment.
	deletePrefix("app2/f", 1)
	wantAbsent(t, s, "app2/f1")
	wantContent(t, s, "app2/g1", []byte("app2/g1"))
	// The application's keys can be used again after it was cleared.
	put(t, s, "app1/f1", []byte("new"))
	wantContent(t, s, "app1/f1", []byte("new"))
}

func testNestedKeys(t *testing.T, s blobs.Store) {
	// A key may also be a folder of other keys.
	put(t, s, "a/b", []byte("outer"))
	put(t, s, "a/b/c", []byte("inner"))
	wantContent(t, s, "a/b", []byte("outer"))
	wantContent(t, s, "a/b/c", []byte("inner"))
	if err := s.Delete(t.Context(), "a/b"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantAbsent(t, s, "a/b")
	wantContent(t, s, "a/b/c", []byte("inner"))
}

func testInvalidKeys(t *testing.T, s blobs.Store) {
	ctx := t.Context()
	bad := []string{
		"", "/abs", "app1/", "a//b", "..", "a/../b", "a/..", "a..b", ".hidden", "a/.tmp-1",
		"./a", "a/./b", `a\b`, "a b", "a\x00b", "é", "a:b", "a*", "a?b", "a%2fb",
		strings.Repeat("k/", blobs.MaxKeyLen/2) + "k", strings.Repeat("k", blobs.MaxSegmentLen+1),
	}
	for _, key := range bad {
		if _, _, err := s.Put(ctx, key, strings.NewReader("x"), 0); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if rc, _, err := s.Open(ctx, key); !errors.Is(err, blobs.ErrInvalidKey) {
			if rc != nil {
				_ = rc.Close()
			}
			t.Errorf("Open(%q) = %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	put(t, s, "app1/keep", []byte("keep"))
	for _, prefix := range []string{"", "/", "/app1", "..", "app1/../", "a//", ".x", "app 1"} {
		if n, err := s.DeletePrefix(ctx, prefix); !errors.Is(err, blobs.ErrInvalidKey) || n != 0 {
			t.Errorf("DeletePrefix(%q) = %d, %v; want 0, ErrInvalidKey", prefix, n, err)
		}
	}
	wantContent(t, s, "app1/keep", []byte("keep"))
}

func testLongestKey(t *testing.T, s blobs.Store) {
	for _, key := range []string{
		strings.Repeat("k", blobs.MaxSegmentLen) + "/" + strings.Repeat("k", blobs.MaxKeyLen-blobs.MaxSegmentLen-1),
		"A-Za_z.0-9/" + strings.Repeat("x/", (blobs.MaxKeyLen-12)/2) + "y",
	} {
		if len(key) > blobs.MaxKeyLen {
			t.Fatalf("test key is %d bytes", len(key))
		}
		put(t, s, key, []byte(key))
		wantContent(t, s, key, []byte(key))
	}
}

func testTooLarge(t *testing.T, s blobs.Store) {
	for _, n := range []int64{11, spillSize} {
		key := fmt.Sprintf("app1/big%d", n)
		size, sum, err := s.Put(t.Context(), key, Data(1, n), n-1)
		if !errors.Is(err, blobs.ErrTooLarge) {
			t.Fatalf("Put of %d bytes with maxBytes %d = %d, %q, %v; want ErrTooLarge", n, n-1, size, sum, err)
		}
		wantAbsent(t, s, key)
	}
}

func testTooLargeKeepsPrevious(t *testing.T, s blobs.Store) {
	prev := dataBytes(7, 5000)
	put(t, s, "app1/f", prev)
	for _, n := range []int64{5001, spillSize} {
		if _, _, err := s.Put(t.Context(), "app1/f", Data(8, n), 5000); !errors.Is(err, blobs.ErrTooLarge) {
			t.Fatalf("Put of %d bytes with maxBytes 5000 = %v, want ErrTooLarge", n, err)
		}
		wantContent(t, s, "app1/f", prev)
	}
}

func testExactlyMax(t *testing.T, s blobs.Store) {
	data := dataBytes(3, 4096)
	size, sum, err := s.Put(t.Context(), "app1/f", bytes.NewReader(data), 4096)
	if err != nil {
		t.Fatalf("Put of exactly maxBytes: %v", err)
	}
	if size != 4096 || sum != sumHex(data) {
		t.Fatalf("Put = %d, %s; want 4096, %s", size, sum, sumHex(data))
	}
	wantContent(t, s, "app1/f", data)
}

var errBroken = errors.New("blobstest: reader broke")

// failingReader yields n deterministic bytes, then fails with errBroken.
type failingReader struct {
	r io.Reader
}

func newFailingReader(seed uint64, n int64) *failingReader {
	return &failingReader{r: Data(seed, n)}
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errBroken
	}
	return n, err
}

func testFailingReader(t *testing.T, s blobs.Store) {
	prev := dataBytes(9, 3000)
	put(t, s, "app1/prev", prev)
	for _, n := range []int64{0, 100, 300 << 10, spillSize} {
		for _, key := range []string{"app1/new", "app1/prev"} {
			_, _, err := s.Put(t.Context(), key, newFailingReader(10, n), 0)
			if !errors.Is(err, errBroken) {
				t.Fatalf("Put(%q) with a reader failing after %d bytes = %v, want the reader's error", key, n, err)
			}
		}
		wantAbsent(t, s, "app1/new")
		wantContent(t, s, "app1/prev", prev)
	}
}

// cancellingReader yields deterministic bytes forever and cancels its context once it
// has yielded after bytes, as a client that goes away mid-upload.
type cancellingReader struct {
	r      io.Reader
	after  int64
	read   int64
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read >= c.after {
		c.cancel()
	}
	return n, err
}

func testCancelledMidway(t *testing.T, s blobs.Store) {
	prev := dataBytes(11, 3000)
	put(t, s, "app1/prev", prev)
	for _, n := range []int64{1, 300 << 10, spillSize} {
		for _, key := range []string{"app1/new", "app1/prev"} {
			ctx, cancel := context.WithCancel(t.Context())
			r := &cancellingReader{r: Data(12, 1<<40), after: n, cancel: cancel}
			_, _, err := s.Put(ctx, key, r, 0)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Put(%q) cancelled after %d bytes = %v, want context.Canceled", key, n, err)
			}
		}
		wantAbsent(t, s, "app1/new")
		wantContent(t, s, "app1/prev", prev)
	}
}

func testCancelledBefore(t *testing.T, s blobs.Store) {
	put(t, s, "app1/prev", []byte("prev"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, key := range []string{"app1/new", "app1/prev"} {
		if _, _, err := s.Put(ctx, key, strings.NewReader("data"), 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Put(%q) with a cancelled context = %v, want context.Canceled", key, err)
		}
	}
	wantAbsent(t, s, "app1/new")
	wantContent(t, s, "app1/prev", []byte("prev"))
}

func testConcurrentPuts(t *testing.T, s blobs.Store) {
	const workers = 8
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i := range workers {
		wg.Go(func() {
			data := dataBytes(uint64(100+i), 200<<10+i)
			key := fmt.Sprintf("app%d/f", i%3) + fmt.Sprint(i)
			size, sum, err := s.Put(t.Context(), key, bytes.NewReader(data), 0)
			if err == nil && (size != int64(len(data)) || sum != sumHex(data)) {
				err = fmt.Errorf("Put answered %d, %s; want %d, %s", size, sum, len(data), sumHex(data))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	for i := range workers {
		wantContent(t, s, fmt.Sprintf("app%d/f", i%3)+fmt.Sprint(i), dataBytes(uint64(100+i), 200<<10+i))
	}
}

func testConcurrentPutsSameKey(t *testing.T, s blobs.Store) {
	// Concurrent replacements of one key: every Put succeeds and the key ends up holding
	// exactly one of the contents, never a mix or nothing.
	const workers = 4
	sums := map[string]bool{}
	for i := range workers {
		sums[sumHex(dataBytes(uint64(200+i), 300<<10+i))] = true
	}
	put(t, s, "app1/f", []byte("before"))
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i := range workers {
		wg.Go(func() {
			_, _, errs[i] = s.Put(t.Context(), "app1/f", Data(uint64(200+i), int64(300<<10+i)), 0)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if got := sumHex(read(t, s, "app1/f")); !sums[got] {
		t.Fatalf("after concurrent Puts the key holds sha256 %s, not one of the contents put", got)
	}
	if err := s.Delete(t.Context(), "app1/f"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantAbsent(t, s, "app1/f")
}

func testDeadlineContext(t *testing.T, s blobs.Store) {
	// Servers see a context deadline (the driver turns it into maxTimeMS, for one), so
	// every method must work under one, as it does under HTTP request timeouts.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	data := dataBytes(13, 300<<10)
	if _, _, err := s.Put(ctx, "app1/f", bytes.NewReader(data), 0); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if _, _, err := s.Put(ctx, "app1/f", bytes.NewReader(data), 0); err != nil {
		t.Fatalf("Put replacing: %v", err)
	}
	if _, _, err := s.Put(ctx, "app1/g", Data(13, 1000), 999); !errors.Is(err, blobs.ErrTooLarge) {
		t.Fatalf("Put too large = %v, want ErrTooLarge", err)
	}
	rc, size, err := s.Open(ctx, "app1/f")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil || size != int64(len(data)) || !bytes.Equal(got, data) {
		t.Fatalf("Open read %d of %d bytes, %v; want the %d put", len(got), size, err, len(data))
	}
	if rc, _, err := s.Open(ctx, "app1/none"); !errors.Is(err, blobs.ErrNotFound) {
		if rc != nil {
			_ = rc.Close()
		}
		t.Fatalf("Open absent = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "app1/f"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	put(t, s, "app1/h", []byte("h"))
	if n, err := s.DeletePrefix(ctx, "app1/"); err != nil || n != 1 {
		t.Fatalf("DeletePrefix = %d, %v; want 1", n, err)
	}
}

func testBig(t *testing.T, s blobs.Store) {
	want := DataSHA256(42, bigSize)
	size, sum, err := s.Put(t.Context(), "app1/big", Data(42, bigSize), bigSize)
	if err != nil {
		t.Fatalf("Put of %d bytes: %v", bigSize, err)
	}
	if size != bigSize || sum != want {
		t.Fatalf("Put = %d, %s; want %d, %s", size, sum, bigSize, want)
	}
	gotSize, gotSum := streamSHA256(t, s, "app1/big")
	if gotSize != bigSize || gotSum != want {
		t.Fatalf("Open read %d bytes, sha256 %s; want %d, %s", gotSize, gotSum, bigSize, want)
	}
}

// streamSHA256 reads key through a small buffer and answers its size and SHA-256,
// checking the size Open answered.
func streamSHA256(t *testing.T, s blobs.Store, key string) (int64, string) {
	t.Helper()
	rc, size, err := s.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	n, err := io.CopyBuffer(h, rc, make([]byte, 64<<10))
	if err != nil {
		t.Fatalf("read %q after %d bytes: %v", key, n, err)
	}
	if n != size {
		t.Fatalf("Open(%q) answered size %d, read %d bytes", key, size, n)
	}
	return n, hex.EncodeToString(h.Sum(nil))
}
