package storage

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// No S3-compatible server is packaged for this machine (MinIO is not in
// Debian), so these tests check the backend's requests instead: an
// httptest endpoint verifies each request's AWS Signature V4 with an
// independent implementation (the access key, region and credential
// scope the configuration names, the canonical request, the payload
// hash), checks the path-style bucket and prefix, and answers the
// object operations from memory (ranged GETs through http.ServeContent).

const (
	testAccess = "AKIAPLINTHTEST"
	testSecret = "plinth/secret/key"
	testRegion = "eu-test-1"
)

type fakeBucket struct {
	t       *testing.T
	mu      sync.Mutex
	objects map[string][]byte
	signed  int
	refused int  // requests refused for a bad signature
	quiet   bool // a refusal is expected, not a test failure
}

func hmacSHA(key []byte, s string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return h.Sum(nil)
}

// verify checks r's SigV4 Authorization header against body, and returns
// the payload (decoded from aws-chunked, each chunk's signature verified,
// for a streaming upload).
func (f *fakeBucket) verify(r *http.Request, body []byte) ([]byte, error) {
	seed, scope, key, amzDate, err := f.verifyHeader(r, body)
	if err != nil || r.Header.Get("X-Amz-Content-Sha256") != streaming {
		return body, err
	}
	var out []byte
	prev := seed
	empty := sha256.Sum256(nil)
	for {
		line, rest, ok := bytes.Cut(body, []byte("\r\n"))
		if !ok {
			return nil, errors.New("aws-chunked: truncated")
		}
		sizeHex, sig, _ := strings.Cut(string(line), ";chunk-signature=")
		var size int
		if _, err := fmt.Sscanf(sizeHex, "%x", &size); err != nil || len(rest) < size+2 {
			return nil, errors.New("aws-chunked: bad chunk header")
		}
		chunk := rest[:size]
		sum := sha256.Sum256(chunk)
		toSign := "AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n" + prev + "\n" + hex.EncodeToString(empty[:]) + "\n" + hex.EncodeToString(sum[:])
		if want := hex.EncodeToString(hmacSHA(key, toSign)); want != sig {
			return nil, errors.New("aws-chunked: chunk signature mismatch")
		}
		prev = sig
		out = append(out, chunk...)
		body = rest[size+2:]
		if size == 0 {
			return out, nil
		}
	}
}

const streaming = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"

// verifyHeader checks the signature of the request itself and returns it
// with the scope, signing key and date that chunk signatures chain from.
func (f *fakeBucket) verifyHeader(r *http.Request, body []byte) (seed, scope string, key []byte, amzDate string, err error) {
	auth := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return "", "", nil, "", errors.New("not a SigV4 request: " + auth)
	}
	parts := map[string]string{}
	for _, p := range strings.Split(strings.TrimPrefix(auth, algo), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		parts[k] = v
	}
	cred := strings.Split(parts["Credential"], "/")
	if len(cred) != 5 || cred[0] != testAccess || cred[2] != testRegion || cred[3] != "s3" || cred[4] != "aws4_request" {
		return "", "", nil, "", errors.New("credential scope: " + parts["Credential"])
	}
	amzDate = r.Header.Get("X-Amz-Date")
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload != "UNSIGNED-PAYLOAD" && payload != streaming {
		sum := sha256.Sum256(body)
		if payload != hex.EncodeToString(sum[:]) {
			return "", "", nil, "", errors.New("payload hash does not match the body")
		}
	}
	signed := strings.Split(parts["SignedHeaders"], ";")
	var ch strings.Builder
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		ch.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cq []string
	for _, k := range keys {
		for _, v := range q[k] {
			cq = append(cq, url.QueryEscape(k)+"="+strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
		}
	}
	canonical := strings.Join([]string{r.Method, r.URL.EscapedPath(), strings.Join(cq, "&"), ch.String(), parts["SignedHeaders"], payload}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	scope = strings.Join(cred[1:], "/")
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key = hmacSHA(hmacSHA(hmacSHA(hmacSHA([]byte("AWS4"+testSecret), cred[1]), cred[2]), "s3"), "aws4_request")
	if want := hex.EncodeToString(hmacSHA(key, toSign)); !hmac.Equal([]byte(want), []byte(parts["Signature"])) {
		return "", "", nil, "", errors.New("signature mismatch")
	}
	return parts["Signature"], scope, key, amzDate, nil
}

func (f *fakeBucket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	body, err := f.verify(r, raw)
	if err != nil {
		f.mu.Lock()
		f.refused++
		f.mu.Unlock()
		if !f.quiet {
			f.t.Errorf("%s %s: %v (%s)", r.Method, r.URL, err, r.Header.Get("X-Amz-Content-Sha256"))
		}
		w.WriteHeader(http.StatusForbidden)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signed++
	name, ok := strings.CutPrefix(r.URL.Path, "/media-bucket/")
	if !ok {
		f.t.Errorf("path-style bucket expected: %s", r.URL.Path)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	notFound := func() {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>no</Message><Key>`+name+`</Key></Error>`)
		}
	}
	switch r.Method {
	case http.MethodPut:
		f.objects[name] = body
		w.Header().Set("ETag", `"`+hex.EncodeToString(hmacSHA(nil, string(body)))[:32]+`"`)
	case http.MethodGet, http.MethodHead:
		data, ok := f.objects[name]
		if !ok {
			notFound()
			return
		}
		w.Header().Set("ETag", `"abc"`)
		http.ServeContent(w, r, "", time.Unix(1700000000, 0), bytes.NewReader(data))
	case http.MethodDelete:
		delete(f.objects, name)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func TestS3Store(t *testing.T) {
	fb := &fakeBucket{t: t, objects: map[string][]byte{}}
	srv := httptest.NewServer(fb)
	defer srv.Close()
	env := map[string]string{
		"AWS_ENDPOINT_URL_S3": srv.URL, "AWS_REGION": testRegion, "S3_FORCE_PATH_STYLE": "1",
		"AWS_ACCESS_KEY_ID": testAccess, "AWS_SECRET_ACCESS_KEY": testSecret,
	}
	st, err := Open("s3://media-bucket/site-media", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	n, err := st.Put(ctx, "prj_1/_u/hero.abc", bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("put: %d %v", n, err)
	}
	if _, ok := fb.objects["site-media/prj_1/_u/hero.abc"]; !ok {
		t.Fatalf("object stored under the prefix: %v", fb.objects)
	}
	o, err := st.Open(ctx, "prj_1/_u/hero.abc")
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != int64(len(data)) || !o.ModTime().Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("stat: %d %v", o.Size(), o.ModTime())
	}
	// http.ServeContent seeks to serve ranges: a seek then a read is a
	// ranged GET.
	if _, err := o.Seek(5000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(o, buf); err != nil || string(buf) != "0123456789" {
		t.Fatalf("ranged read: %q %v", buf, err)
	}
	o.Close()
	if _, err := st.Open(ctx, "prj_1/missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing object: %v", err)
	}
	if err := st.Delete(ctx, "prj_1/_u/hero.abc"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "prj_1/_u/hero.abc"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := st.Put(ctx, "../escape", strings.NewReader("x")); err == nil {
		t.Fatal("an invalid key is refused")
	}
	if fb.signed < 6 {
		t.Fatalf("only %d verified requests", fb.signed)
	}

	// Wrong credentials are refused by the endpoint, and the error surfaces.
	env["AWS_SECRET_ACCESS_KEY"] = "wrong"
	bad, err := Open("s3://media-bucket", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	fb.mu.Lock()
	fb.quiet = true
	fb.mu.Unlock()
	if _, err := bad.Put(ctx, "x", strings.NewReader("x")); err == nil || fb.refused == 0 {
		t.Fatalf("a badly signed put must be refused: %v", err)
	}
}

func TestS3ConfigFromEnv(t *testing.T) {
	u, _ := url.Parse("s3://bucket/a/b")
	c, err := S3ConfigFromEnv(u, func(k string) string {
		return map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_DEFAULT_REGION": "x-1"}[k]
	})
	if err != nil || c.Bucket != "bucket" || c.Prefix != "a/b" || c.Endpoint != "http://127.0.0.1:9000" || c.Region != "x-1" || c.PathStyle {
		t.Fatalf("%+v %v", c, err)
	}
	c, _ = S3ConfigFromEnv(&url.URL{Scheme: "s3", Host: "b"}, func(string) string { return "" })
	if c.Endpoint != "https://s3.amazonaws.com" {
		t.Fatalf("default endpoint: %s", c.Endpoint)
	}
	if _, err := S3ConfigFromEnv(&url.URL{Scheme: "s3"}, func(string) string { return "" }); err == nil {
		t.Fatal("a bucket is required")
	}
}
