package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// multipartBody builds an upload; fields named in before go ahead of the file part, the
// others after it.
func multipartBody(t *testing.T, filename string, content []byte, before, after map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range before {
		_ = w.WriteField(k, v)
	}
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(content)
	}
	for k, v := range after {
		_ = w.WriteField(k, v)
	}
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

func TestFiles(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		env["KEYWARD_MAX_UPLOAD_BYTES"] = "200000"
		s := ts.StartEnv(t, env)
		a := api{t, s, newOwner(t, s).Token}
		id, _ := a.createApp("Files")
		base := "/api/apps/" + id + "/files"
		upload := func(body []byte, ct string) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: base, Token: a.token, Body: body, ContentType: ct})
		}
		content := bytes.Repeat([]byte("keyward-bytes\x00\xff"), 10000) // 150 kB
		sum := sha256.Sum256(content)

		body, ct := multipartBody(t, "client.exe", content, map[string]string{"version": "2.1.0"}, map[string]string{"name": "Client"})
		r := upload(body, ct)
		expectOK(t, r, http.StatusCreated)
		d := r.Data()
		if d["name"] != "Client" || d["version"] != "2.1.0" || d["size"] != float64(len(content)) || d["hash"] != hex.EncodeToString(sum[:]) {
			t.Fatalf("upload: %s", r.Raw)
		}
		fileID := d["id"].(string)

		t.Run("download returns the bytes", func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.URL+base+"/"+fileID+"/download", nil)
			req.Header.Set("Authorization", "Bearer "+a.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !bytes.Equal(got, content) || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename=Client`) ||
				resp.Header.Get("X-File-Hash") != hex.EncodeToString(sum[:]) {
				t.Fatalf("download: %d %v", resp.StatusCode, resp.Header)
			}
		})
		t.Run("bad uploads write nothing", func(t *testing.T) {
			big, bct := multipartBody(t, "big.bin", bytes.Repeat([]byte{1}, 300000), nil, nil)
			expect(t, upload(big, bct), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
			noFile, nct := multipartBody(t, "", nil, map[string]string{"name": "x"}, nil)
			expect(t, upload(noFile, nct), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: base, Token: a.token, Body: map[string]string{"file": "x"}}), http.StatusBadRequest, "VALIDATION_ERROR")
			badName, bnct := multipartBody(t, "a.bin", []byte("x"), map[string]string{"name": "a/b"}, nil)
			expect(t, upload(badName, bnct), http.StatusBadRequest, "VALIDATION_ERROR")
			if n := len(a.do("GET", base, nil).Body["data"].([]any)); n != 1 {
				t.Fatalf("files after refused uploads: %d", n)
			}
			if !e.Mongo {
				leftovers, _ := filepath.Glob(filepath.Join(s.DataDir, "files", id, "*"))
				if len(leftovers) != 1 {
					t.Fatalf("blob files on disk: %v", leftovers)
				}
			}
		})
		t.Run("update and delete", func(t *testing.T) {
			r := a.do("PATCH", base+"/"+fileID, map[string]any{"version": "2.2.0"})
			expectOK(t, r, http.StatusOK)
			if r.Data()["version"] != "2.2.0" || r.Data()["name"] != "Client" {
				t.Fatalf("update: %s", r.Raw)
			}
			expect(t, a.do("PATCH", base+"/"+fileID, map[string]any{"name": ""}), http.StatusBadRequest, "VALIDATION_ERROR")
			stranger := api{t, s, newOwner(t, s).Token}
			expect(t, stranger.do("GET", base+"/"+fileID+"/download", nil), http.StatusNotFound, "NOT_FOUND")
			expectOK(t, a.do("DELETE", base+"/"+fileID, nil), http.StatusOK)
			expect(t, a.do("DELETE", base+"/"+fileID, nil), http.StatusNotFound, "NOT_FOUND")
			expect(t, a.do("GET", base+"/"+fileID+"/download", nil), http.StatusNotFound, "NOT_FOUND")
			waitLog(t, a, id, "file.delete")
		})
		t.Run("deleting the app deletes the bytes", func(t *testing.T) {
			body, ct := multipartBody(t, "x.bin", []byte("bye"), nil, nil)
			expectOK(t, upload(body, ct), http.StatusCreated)
			expectOK(t, a.do("DELETE", "/api/apps/"+id, map[string]any{"confirm": true}), http.StatusOK)
			if !e.Mongo {
				if _, err := os.Stat(filepath.Join(s.DataDir, "files", id)); !os.IsNotExist(err) {
					entries, _ := os.ReadDir(filepath.Join(s.DataDir, "files", id))
					if len(entries) != 0 {
						t.Fatalf("bytes left after app delete: %v", entries)
					}
				}
			}
		})
	})
}
