package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	ts "github.com/keyward/keyward/internal/testserver"
)

// storedBlobs lists what the node's blob store holds: every file under <data dir>/files
// (temporary uploads included) in the embedded mode, every GridFS files and chunks document
// otherwise.
func storedBlobs(t *testing.T, s *ts.Server, mongoMode bool) []string {
	t.Helper()
	var out []string
	if !mongoMode {
		root := filepath.Join(s.DataDir, "files")
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				out = append(out, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk blobs: %v", err)
		}
		sort.Strings(out)
		return out
	}
	client, err := mongo.Connect(options.Client().ApplyURI(s.Config.MongoURI))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	db := client.Database(s.Config.MongoDatabase)
	for _, coll := range []string{"files.files", "files.chunks"} {
		cur, err := db.Collection(coll).Find(t.Context(), bson.D{})
		if err != nil {
			t.Fatalf("find %s: %v", coll, err)
		}
		var docs []bson.M
		if err := cur.All(t.Context(), &docs); err != nil {
			t.Fatalf("read %s: %v", coll, err)
		}
		for _, d := range docs {
			out = append(out, fmt.Sprintf("%s:%v", coll, d["_id"]))
		}
	}
	sort.Strings(out)
	return out
}

// TestRefusedUploadsChangeNothing sends real malformed multipart bodies: each is refused
// with a 400 envelope (not a 500), and none leaves a record, an event or stored bytes.
func TestRefusedUploadsChangeNothing(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.StartEnv(t, ts.Env(t, e))
		a := api{t, s, newOwner(t, s).Token}
		id, _ := a.createApp("Refused")
		base := "/api/apps/" + id + "/files"
		upload := func(body []byte, ct string) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: base, Token: a.token, Body: body, ContentType: ct})
		}
		content := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 kB: more than one GridFS chunk

		good, gct := multipartBody(t, "kept.bin", content, nil, nil)
		expectOK(t, upload(good, gct), http.StatusCreated)
		before := storedBlobs(t, s, e.Mongo)
		if len(before) == 0 {
			t.Fatal("the good upload stored nothing")
		}

		// build writes parts in order: a "file:<name>" entry is a file part with content,
		// anything else a field; the result is cut to keep bytes when keep > 0.
		build := func(parts []string, keep int) ([]byte, string) {
			var buf bytes.Buffer
			w := multipart.NewWriter(&buf)
			for _, p := range parts {
				if fn, ok := strings.CutPrefix(p, "file:"); ok {
					fw, _ := w.CreateFormFile("file", fn)
					_, _ = fw.Write(content)
				} else {
					k, v, _ := strings.Cut(p, "=")
					_ = w.WriteField(k, v)
				}
			}
			_ = w.Close()
			b := buf.Bytes()
			if keep > 0 {
				b = b[:keep]
			}
			return b, w.FormDataContentType()
		}
		full, _ := build([]string{"file:a.bin", "name=after"}, 0)
		afterFile := bytes.Index(full, []byte("after")) // inside the field that follows the file
		for _, tc := range []struct {
			name  string
			parts []string
			keep  int
			code  string
		}{
			{"body ends inside the only file part", []string{"file:a.bin"}, len(content) / 2, "VALIDATION_ERROR"},
			{"body ends inside the file part after a field", []string{"version=2.0.0", "file:a.bin"}, len(content) - 100, "VALIDATION_ERROR"},
			{"body ends inside a field after the file", []string{"file:a.bin", "name=after"}, afterFile + 2, "VALIDATION_ERROR"},
			{"body ends without the closing boundary", []string{"file:a.bin"}, len(content) + 200, "VALIDATION_ERROR"},
			{"two file parts", []string{"file:a.bin", "file:b.bin"}, 0, "VALIDATION_ERROR"},
			{"a bad name after the file", []string{"file:a.bin", "name=a/b"}, 0, "VALIDATION_ERROR"},
			{"a bad version after the file", []string{"file:a.bin", "version=" + strings.Repeat("9", 40)}, 0, "VALIDATION_ERROR"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body, ct := build(tc.parts, tc.keep)
				expect(t, upload(body, ct), http.StatusBadRequest, tc.code)
				if n := len(a.do("GET", base, nil).Body["data"].([]any)); n != 1 {
					t.Fatalf("files listed after a refused upload: %d, want 1", n)
				}
				if after := storedBlobs(t, s, e.Mongo); strings.Join(after, "\n") != strings.Join(before, "\n") {
					t.Fatalf("stored bytes changed by a refused upload:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
		// The only event of the whole test is the good upload's.
		waitLog(t, a, id, "file.upload")
		logs := a.do("GET", "/api/apps/"+id+"/logs?event=file.upload", nil)
		if n := len(logs.Data()["logs"].([]any)); n != 1 {
			t.Fatalf("file.upload entries: %d, want 1 (refused uploads were announced): %s", n, logs.Raw)
		}
	})
}
