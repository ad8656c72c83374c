package backup

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config names an S3-compatible bucket (AWS S3, MinIO, Backblaze B2, Cloudflare R2, …).
type S3Config struct {
	Endpoint  string // host[:port], no scheme
	Bucket    string
	Prefix    string // a folder in the bucket, e.g. "keyward/"
	AccessKey string
	SecretKey string
	Region    string
	// Insecure talks plain HTTP (a bucket on the local network or a test server).
	Insecure bool
}

// S3 keeps backups in an S3-compatible bucket through minio-go.
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string
	where  string
}

// NewS3 connects to the bucket (no request is made until the first backup).
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("backup to S3: endpoint and bucket are required")
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: !cfg.Insecure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("backup to S3 at %s: %w", cfg.Endpoint, err)
	}
	prefix := cfg.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: prefix, where: fmt.Sprintf("s3 %s/%s/%s", cfg.Endpoint, cfg.Bucket, prefix)}, nil
}

// Put implements Destination.
func (s *S3) Put(ctx context.Context, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = s.c.PutObject(ctx, s.bucket, s.prefix+name, f, st.Size(), minio.PutObjectOptions{ContentType: "application/gzip"})
	return err
}

// List implements Destination.
func (s *S3) List(ctx context.Context) ([]Object, error) {
	var out []Object
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix}) {
		if o.Err != nil {
			return nil, o.Err
		}
		out = append(out, Object{Name: strings.TrimPrefix(o.Key, s.prefix), Size: o.Size, CreatedAt: o.LastModified})
	}
	return out, nil
}

// Open implements Destination.
func (s *S3) Open(ctx context.Context, name string) (io.ReadCloser, int64, error) {
	o, err := s.c.GetObject(ctx, s.bucket, s.prefix+name, minio.GetObjectOptions{})
	if err != nil {
		return nil, 0, err
	}
	st, err := o.Stat()
	if err != nil {
		_ = o.Close()
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, 0, os.ErrNotExist
		}
		return nil, 0, err
	}
	return o, st.Size, nil
}

// Delete implements Destination.
func (s *S3) Delete(ctx context.Context, name string) error {
	return s.c.RemoveObject(ctx, s.bucket, s.prefix+name, minio.RemoveObjectOptions{})
}

func (s *S3) String() string { return s.where }
