package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 stores objects in a bucket of an S3-compatible service (AWS S3,
// MinIO, R2, …) through minio-go. Store keys are prefixed with the
// optional path of PLINTH_STORAGE=s3://bucket/prefix.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
}

// S3Config is what NewS3 needs; S3ConfigFromEnv reads it from the usual
// variables.
type S3Config struct {
	Bucket       string
	Prefix       string
	Endpoint     string // host[:port], or a URL whose scheme chooses TLS
	Region       string
	AccessKey    string
	SecretKey    string
	SessionToken string
	PathStyle    bool
	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
}

// S3ConfigFromEnv reads the S3 settings of spec (s3://bucket[/prefix])
// from getenv:
//
//	AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or S3_ENDPOINT  endpoint (default s3.amazonaws.com)
//	AWS_REGION or AWS_DEFAULT_REGION                     region (default: asked of the service)
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
//	                                                     static credentials; without them the
//	                                                     shared credentials file and instance
//	                                                     roles (IAM) are tried
//	S3_FORCE_PATH_STYLE=1                                bucket in the path, not the host name
func S3ConfigFromEnv(u *url.URL, getenv func(string) string) (S3Config, error) {
	c := S3Config{
		Bucket:       u.Host,
		Prefix:       strings.Trim(u.Path, "/"),
		Endpoint:     first(getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"), getenv("S3_ENDPOINT"), "https://s3.amazonaws.com"),
		Region:       first(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION")),
		AccessKey:    getenv("AWS_ACCESS_KEY_ID"),
		SecretKey:    getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken: getenv("AWS_SESSION_TOKEN"),
		PathStyle:    getenv("S3_FORCE_PATH_STYLE") == "1" || getenv("S3_FORCE_PATH_STYLE") == "true",
	}
	if c.Bucket == "" {
		return c, errors.New("PLINTH_STORAGE: s3:// needs a bucket (s3://bucket[/prefix])")
	}
	if c.Prefix != "" && !ValidKey(c.Prefix) {
		return c, fmt.Errorf("PLINTH_STORAGE: invalid prefix %q", c.Prefix)
	}
	return c, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// NewS3 returns an S3 store. It makes no request: a wrong bucket or
// credentials show on the first Put.
func NewS3(c S3Config) (*S3, error) {
	endpoint, secure := c.Endpoint, true
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("storage: invalid S3 endpoint %q", c.Endpoint)
		}
		endpoint, secure = u.Host, u.Scheme != "http"
	}
	var creds *credentials.Credentials
	if c.AccessKey != "" {
		creds = credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken)
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds: creds, Secure: secure, Region: c.Region, BucketLookup: lookup, Transport: c.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return &S3{client: client, bucket: c.Bucket, prefix: c.Prefix}, nil
}

func (s *S3) name(key string) (string, error) {
	if !ValidKey(key) {
		return "", fmt.Errorf("storage: invalid key %q", key)
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// Put uploads r under key. A reader that knows its length (bytes.Reader,
// strings.Reader) is sent in one request; others as a multipart upload.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	name, err := s.name(key)
	if err != nil {
		return 0, err
	}
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	info, err := s.client.PutObject(ctx, s.bucket, name, r, size, minio.PutObjectOptions{})
	if err != nil {
		return 0, fmt.Errorf("storage: put %s: %w", name, err)
	}
	return info.Size, nil
}

// Open opens key for reading; reads and seeks are ranged GETs.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, ErrNotFound
	}
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, s3Err(err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, s3Err(err)
	}
	return &s3Object{Object: obj, size: st.Size, mod: st.LastModified}, nil
}

// Delete removes key (ErrNotFound when absent: S3 itself does not say, so
// the object is looked up first).
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return ErrNotFound
	}
	if _, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{}); err != nil {
		return s3Err(err)
	}
	return s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{})
}

// DeletePrefix lists the objects under prefix/ and removes them in
// batches (S3 has no delete by prefix).
func (s *S3) DeletePrefix(ctx context.Context, prefix string) error {
	name, err := s.name(prefix)
	if err != nil {
		return err
	}
	objects := s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: name + "/", Recursive: true})
	for e := range s.client.RemoveObjects(ctx, s.bucket, objects, minio.RemoveObjectsOptions{}) {
		if e.Err != nil {
			return fmt.Errorf("storage: delete %s: %w", e.ObjectName, e.Err)
		}
	}
	return nil
}

func s3Err(err error) error {
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey, "NotFound":
		return ErrNotFound
	}
	return fmt.Errorf("storage: %w", err)
}

type s3Object struct {
	*minio.Object
	size int64
	mod  time.Time
}

func (o *s3Object) Size() int64        { return o.size }
func (o *s3Object) ModTime() time.Time { return o.mod }
