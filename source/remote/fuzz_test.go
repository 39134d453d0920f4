package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The fuzz targets serve what a misbehaving or hostile server could answer (any
// status, headers such as Content-Length, Content-Range and ETag, any body, bodies cut
// short) through a fake RoundTripper, and check that every read path ends, with data
// of the size it claims or an error that names the URL without its secrets, and never
// allocates what a header claims beyond the limits.

const fuzzURL = "http://alice:FUZZPASS@fuzz.example/data/obj.bin?X-Amz-Signature=FUZZSIG"

// cannedTransport answers every request with the same response, built afresh.
type cannedTransport struct {
	status int
	header http.Header
	body   []byte
	cutAt  int // the body fails with a reset after this many bytes (-1: whole)
}

type cutBody struct {
	r   io.Reader
	cut bool
}

func (c *cutBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF && c.cut {
		return n, errors.New("connection reset by peer")
	}
	return n, err
}
func (c *cutBody) Close() error { return nil }

func (c *cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body := c.body
	cut := c.cutAt >= 0 && c.cutAt < len(body)
	if cut {
		body = body[:c.cutAt]
	}
	resp := &http.Response{StatusCode: c.status, Status: fmt.Sprintf("%d %s", c.status, http.StatusText(c.status)),
		Header: c.header.Clone(), Request: req, ContentLength: -1, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if v := c.header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			resp.ContentLength = n
		}
	}
	if req.Method == http.MethodHead {
		body, cut = nil, false
	}
	resp.Body = &cutBody{r: bytes.NewReader(body), cut: cut}
	return resp, nil
}

// parseHeaders reads "Name: value" lines.
func parseHeaders(s string) http.Header {
	h := http.Header{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k != "" {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return h
}

// checkFuzzErr checks what an error says: the URL's host and path, no secret.
func checkFuzzErr(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || err == io.EOF {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "FUZZPASS") || strings.Contains(msg, "FUZZSIG") {
		t.Fatalf("%s: error shows a secret: %s", what, msg)
	}
	if !strings.Contains(msg, "fuzz.example/data/obj.bin") {
		t.Fatalf("%s: error does not name the URL: %s", what, msg)
	}
}

const fuzzMax = 1 << 16 // MaxObjectSize and ReadAll's bound: claims above it must be refused

func FuzzRemoteResponse(f *testing.F) {
	seeds := []struct {
		status  int
		headers string
		body    string
		cut     int
	}{
		{200, "Content-Length: 5\nETag: \"a\"", "hello", -1},
		{206, "Content-Length: 5\nContent-Range: bytes 0-4/5\nETag: \"a\"", "hello", -1},
		{206, "Content-Length: 3\nContent-Range: bytes 0-2/9000000000000000000", "abc", -1},
		{206, "Content-Range: bytes 0-4/5", "hel", -1},
		{206, "Content-Range: bytes 2-4/5", "llo", -1},
		{206, "Content-Range: bytes */5", "", -1},
		{206, "Content-Range: garbage", "x", -1},
		{200, "Content-Length: 99999999999", "short", -1},
		{200, "", strings.Repeat("z", 70000), -1},
		{200, "Content-Length: 10", "0123456789", 4},
		{304, "ETag: \"a\"", "", -1},
		{416, "Content-Range: bytes */0", "", -1},
		{412, "", "", -1},
		{404, "", "not found", -1},
		{429, "Retry-After: 0", "", -1},
		{503, "", "busy", -1},
		{302, "Location: http://elsewhere.example/x", "", -1},
		{200, "Content-Length: -3", "", -1},
		{206, "Content-Length: 5\nContent-Range: bytes 0-4/3", "hello", -1},
	}
	for _, s := range seeds {
		f.Add(uint16(s.status), s.headers, []byte(s.body), int32(s.cut))
	}
	f.Fuzz(func(t *testing.T, status uint16, headers string, body []byte, cut int32) {
		code := 100 + int(status)%500
		tr := &cannedTransport{status: code, header: parseHeaders(headers), body: body, cutAt: int(cut)}
		client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		st := NewStore(Options{HTTPClient: client})
		fo := FetchOptions{Concurrency: 2, ChunkSize: 16, MaxObjectSize: fuzzMax, AttemptTimeout: 5 * time.Second,
			Retry: RetryPolicy{MaxAttempts: 2, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}}
		fe := NewFetcher(st, fo)
		ctx := context.Background()

		// Whole-object reads, chunked (16-byte chunks) and refused above fuzzMax.
		data, err := fe.Get(ctx, fuzzURL)
		checkFuzzErr(t, "Get", err)
		if err == nil && len(data) > fuzzMax {
			t.Fatalf("Get returned %d bytes, more than MaxObjectSize", len(data))
		}
		s := fe.StreamUpTo(ctx, Infos(fuzzURL), 100)
		if r, ok := s.Next(); ok {
			checkFuzzErr(t, "StreamUpTo", r.Err)
			if r.Err == nil && (len(r.Data) > 100 || int64(len(r.Data)) != r.Info.Size) {
				t.Fatalf("StreamUpTo: %d bytes, Info.Size %d", len(r.Data), r.Info.Size)
			}
		}
		s.Close()

		// Open (HEAD), ranged reads and ReadAll.
		o, err := st.Open(ctx, fuzzURL)
		checkFuzzErr(t, "Open", err)
		if err == nil {
			size := o.Info().Size
			if size < 0 {
				t.Fatalf("Open: negative size %d", size)
			}
			for _, r := range [][2]int64{{0, 4}, {3, 20}, {size - 1, 2}} {
				if r[0] < 0 {
					continue
				}
				p := make([]byte, r[1])
				n, err := o.ReadAt(p, r[0])
				checkFuzzErr(t, "ReadAt", err)
				if n < 0 || n > len(p) || n < len(p) && err == nil {
					t.Fatalf("ReadAt(%d, %d) = %d, %v", r[1], r[0], n, err)
				}
			}
			b, err := o.ReadAll(fuzzMax)
			checkFuzzErr(t, "ReadAll", err)
			if err == nil && int64(len(b)) > fuzzMax {
				t.Fatalf("ReadAll returned %d bytes above its bound", len(b))
			}
			// The FS: a whole-file read is what source.ReadFile does.
			fsys := NewFS(ctx, fe)
			if file, err := fsys.Open(fuzzURL); err == nil && file.Size() <= fuzzMax {
				buf := make([]byte, file.Size())
				_, err := file.ReadAt(buf, 0)
				checkFuzzErr(t, "FS ReadAt", err)
			} else {
				checkFuzzErr(t, "FS Open", err)
			}
			// A shard read front to back, only if its claimed size is small.
			if size <= fuzzMax {
				sr, err := fe.OpenReader(ctx, fuzzURL)
				checkFuzzErr(t, "OpenReader", err)
				if err == nil {
					b, err := io.ReadAll(io.LimitReader(sr, fuzzMax+1))
					checkFuzzErr(t, "ShardReader", err)
					if err == nil && int64(len(b)) != sr.Info().Size {
						t.Fatalf("ShardReader: %d bytes of %d", len(b), sr.Info().Size)
					}
					sr.Close()
				}
			}
		}
		st.CloseIdleConnections()
	})
}

// FuzzS3Listing serves ListObjectsV2 answers (any status and XML) to an S3 client
// and lists through them: the listing ends (a repeated continuation token stops it),
// and its errors name the prefix.
func FuzzS3Listing(f *testing.F) {
	page := `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>%s</IsTruncated>%s
<Contents><Key>p/a.jpg</Key><Size>%s</Size><ETag>&quot;e1&quot;</ETag></Contents><Contents><Key>p/dir/</Key><Size>0</Size></Contents></ListBucketResult>`
	f.Add(uint16(200), fmt.Sprintf(page, "false", "", "12"))
	f.Add(uint16(200), fmt.Sprintf(page, "true", "<NextContinuationToken>t1</NextContinuationToken>", "12"))
	f.Add(uint16(200), fmt.Sprintf(page, "true", "", "-5"))
	f.Add(uint16(200), fmt.Sprintf(page, "maybe", "", "999999999999999999999"))
	f.Add(uint16(200), `<ListBucketResult><Contents><Key></Key></Contents>`)
	f.Add(uint16(200), "")
	f.Add(uint16(403), `<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>`)
	f.Add(uint16(404), `<Error><Code>NoSuchBucket</Code></Error>`)
	f.Add(uint16(500), `<Error><Code>InternalError</Code>`)
	f.Fuzz(func(t *testing.T, status uint16, body string) {
		code := 100 + int(status)%500
		tr := &cannedTransport{status: code, header: http.Header{"Content-Type": {"application/xml"}}, body: []byte(body), cutAt: -1}
		client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://fuzz.example"), UsePathStyle: true,
			Credentials: aws.AnonymousCredentials{}, HTTPClient: &http.Client{Transport: tr}, Retryer: aws.NopRetryer{}})
		b := &s3Backend{client: client}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := b.list(withPageTimeout(ctx, 5*time.Second), "s3://bucket/p/")
		if err != nil {
			if !strings.Contains(err.Error(), "s3://bucket/p/") {
				t.Fatalf("listing error does not name the prefix: %v", err)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the listing did not end")
		}
		for _, o := range out {
			if !strings.HasPrefix(o.URL, "s3://bucket/") || strings.HasSuffix(o.URL, "/") {
				t.Fatalf("listed %q", o.URL)
			}
		}
	})
}
