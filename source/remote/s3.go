package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Options overrides what the AWS configuration chain gives. Empty fields keep it.
type S3Options struct {
	Endpoint string // e.g. http://127.0.0.1:9000 (else AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL / profile)
	Region   string // else AWS_REGION / profile, else us-east-1
	// PathStyle: "true" or "false"; "" reads GODALI_S3_PATH_STYLE, and when that is
	// unset too, uses path-style addressing whenever a custom endpoint is configured.
	PathStyle string
	// Anonymous sends unsigned requests (public buckets); also GODALI_S3_ANONYMOUS=1.
	Anonymous bool
	// PageSize is ListObjectsV2's MaxKeys (0: the server's default, 1000 on AWS).
	PageSize int32
}

type s3Backend struct {
	client    *s3.Client
	transport *http.Transport
	pageSize  int32
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

func newS3Backend(ctx context.Context, o S3Options, maxConns int) (*s3Backend, error) {
	tr := newTransport(maxConns)
	loadOpts := []func(*config.LoadOptions) error{
		// A BuildableClient, so that the chain can add a CA bundle (AWS_CA_BUNDLE).
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns, t.MaxIdleConnsPerHost, t.DisableCompression = tr.MaxIdleConns, tr.MaxIdleConnsPerHost, true
		})),
		// The Fetcher retries with its own policy; two layers of retries would multiply.
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	anonymous := o.Anonymous
	if v, ok := parseBool(os.Getenv("GODALI_S3_ANONYMOUS")); ok {
		anonymous = anonymous || v
	}
	if anonymous {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, &Error{Op: "open", URL: "s3://", Err: fmt.Errorf("loading the AWS configuration: %w", err)}
	}
	// Take the transport the chain configured and own it, to be able to close its
	// idle connections.
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		tr = bc.GetTransport()
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	pathStyle := o.PathStyle
	if pathStyle == "" {
		pathStyle = os.Getenv("GODALI_S3_PATH_STYLE")
	}
	var perr error
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		// Ranged reads carry no whole-object checksum; the SDK would log a line to
		// stderr for each, inside the host process.
		so.DisableLogOutputChecksumValidationSkipped = true
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		if pathStyle == "" || strings.EqualFold(pathStyle, "auto") {
			so.UsePathStyle = so.BaseEndpoint != nil
		} else if v, ok := parseBool(pathStyle); ok {
			so.UsePathStyle = v
		} else {
			perr = fmt.Errorf("GODALI_S3_PATH_STYLE / S3Options.PathStyle is %q, expected true, false or auto", pathStyle)
		}
	})
	if perr != nil {
		return nil, &Error{Op: "open", URL: "s3://", Err: perr}
	}
	return &s3Backend{client: client, transport: tr, pageSize: o.PageSize}, nil
}

type pageTimeoutKey struct{}

// withPageTimeout bounds each request of a paginated listing made under ctx.
func withPageTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, pageTimeoutKey{}, d)
}

func pageTimeout(ctx context.Context) time.Duration {
	d, _ := ctx.Value(pageTimeoutKey{}).(time.Duration)
	return d
}

// splitS3 splits s3://bucket/key.
func splitS3(url string) (bucket, key string, err error) {
	rest := url[len("s3://"):]
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", &Error{Op: "open", URL: url, Err: fmt.Errorf("no bucket in URL (expected s3://bucket/key)")}
	}
	return bucket, key, nil
}

// s3Error maps an SDK error to an *Error carrying the HTTP status.
func s3Error(op, url string, err error) error {
	if code := httpStatus(err); code != 0 {
		if e, ok := statusError(op, url, code).(*Error); ok {
			if !errors.Is(e.Err, ErrNotFound) && !errors.Is(e.Err, ErrChanged) {
				e.Err = err
			}
			return e
		}
	}
	return &Error{Op: op, URL: url, Err: err}
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func (b *s3Backend) stat(ctx context.Context, url string) (ObjectInfo, error) {
	bucket, key, err := splitS3(url)
	if err != nil {
		return ObjectInfo{}, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return ObjectInfo{}, s3Error("open", url, err)
	}
	return ObjectInfo{URL: url, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}, nil
}

func (b *s3Backend) get(ctx context.Context, url string, r getRequest) (*getResponse, error) {
	bucket, key, err := splitS3(url)
	if err != nil {
		return nil, err
	}
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	if rng := rangeHeader(r.Off, r.Len); rng != "" {
		in.Range = &rng
	}
	if r.IfMatch != "" {
		in.IfMatch = aws.String(r.IfMatch)
	}
	if r.IfNoneMatch != "" {
		in.IfNoneMatch = aws.String(r.IfNoneMatch)
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		switch httpStatus(err) {
		case http.StatusNotModified:
			return &getResponse{NotModified: true, Total: -1, Len: -1}, nil
		case http.StatusRequestedRangeNotSatisfiable:
			return &getResponse{Unsatisfiable: true, Total: -1, Len: -1}, nil
		}
		return nil, s3Error("get", url, err)
	}
	resp := &getResponse{Body: out.Body, ETag: aws.ToString(out.ETag), Len: aws.ToInt64(out.ContentLength), Total: -1}
	if out.ContentLength == nil {
		resp.Len = -1
	}
	if cr := aws.ToString(out.ContentRange); cr != "" {
		start, _, total, ok := parseContentRange(cr)
		if !ok {
			out.Body.Close()
			return nil, &Error{Op: "get", URL: url, Err: fmt.Errorf("bad Content-Range %q", cr)}
		}
		resp.Off, resp.Total, resp.Partial = start, total, true
	} else {
		resp.Total = resp.Len
	}
	return resp, nil
}

func (b *s3Backend) list(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	bucket, key, err := splitS3(prefix)
	if err != nil {
		return nil, err
	}
	in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &key}
	if b.pageSize > 0 {
		in.MaxKeys = aws.Int32(b.pageSize)
	}
	var out []ObjectInfo
	// A server answering the same continuation token again would make the listing
	// endless.
	pages := s3.NewListObjectsV2Paginator(b.client, in, func(o *s3.ListObjectsV2PaginatorOptions) { o.StopOnDuplicateToken = true })
	timeout := pageTimeout(ctx)
	for pages.HasMorePages() {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			pctx, cancel = context.WithTimeout(ctx, timeout)
		}
		page, err := pages.NextPage(pctx)
		timedOut := pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err != nil {
			if timedOut {
				err = fmt.Errorf("no complete answer within %v for a listing page (FetchOptions.AttemptTimeout, io_timeout): %w", timeout, err)
			}
			return nil, s3Error("list", prefix, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if strings.HasSuffix(k, "/") { // a "directory" marker, not data
				continue
			}
			out = append(out, ObjectInfo{URL: "s3://" + bucket + "/" + k, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)})
		}
	}
	return out, nil
}
