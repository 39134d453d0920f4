package remote

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GCSOptions overrides what the environment gives for gs:// URLs (doc.go).
type GCSOptions struct {
	// Endpoint is the JSON API's base URL (https://storage.googleapis.com, or an
	// emulator's; else STORAGE_EMULATOR_HOST).
	Endpoint string
	// Anonymous sends no credentials (public buckets); also GODALI_GCS_ANONYMOUS=1.
	Anonymous bool
	// PageSize is objects.list's maxResults (0: the server's default, 1000 on GCS).
	PageSize int
}

// gcsScope is the OAuth scope asked for with a service-account key: reading is all
// godali does.
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_only"

type gcsBackend struct {
	client    *http.Client
	transport *http.Transport
	endpoint  string
	pageSize  int
	tokens    tokenSource // nil: anonymous
}

// tokenSource gives the bearer token for a request.
type tokenSource interface {
	token(ctx context.Context) (string, error)
}

type staticToken string

func (t staticToken) token(context.Context) (string, error) { return string(t), nil }

func newGCSBackend(o GCSOptions, maxConns int) (*gcsBackend, error) {
	tr := newTransport(maxConns)
	b := &gcsBackend{client: &http.Client{Transport: tr}, transport: tr, pageSize: o.PageSize, endpoint: "https://storage.googleapis.com"}
	emulator := false
	if h := strings.TrimSpace(os.Getenv("STORAGE_EMULATOR_HOST")); h != "" {
		// Google's client libraries take host:port or a URL.
		if !strings.Contains(h, "://") {
			h = "http://" + h
		}
		b.endpoint, emulator = h, true
	}
	if o.Endpoint != "" {
		b.endpoint = o.Endpoint
	}
	b.endpoint = strings.TrimRight(b.endpoint, "/")
	if u, err := neturl.Parse(b.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &Error{Op: "open", URL: "gs://", Err: fmt.Errorf("the GCS endpoint %q is not an http(s) URL (STORAGE_EMULATOR_HOST, GCSOptions.Endpoint)", b.endpoint)}
	}
	anonymous := o.Anonymous
	if v, ok := parseBool(os.Getenv("GODALI_GCS_ANONYMOUS")); ok {
		anonymous = anonymous || v
	}
	switch {
	case anonymous:
	case os.Getenv("GOOGLE_OAUTH_ACCESS_TOKEN") != "":
		b.tokens = staticToken(strings.TrimSpace(os.Getenv("GOOGLE_OAUTH_ACCESS_TOKEN")))
	case os.Getenv("GOOGLE_APPLICATION_CREDENTIALS") != "":
		path := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS")
		ts, err := loadServiceAccount(path, b.client)
		if err != nil {
			return nil, &Error{Op: "open", URL: "gs://", Err: fmt.Errorf("GOOGLE_APPLICATION_CREDENTIALS=%s: %w", path, err)}
		}
		b.tokens = ts
	case emulator:
		// Emulators need no credentials.
	default:
		// No credentials: anonymous, which reads public buckets; a private one
		// answers 401/403, and the error says where credentials come from.
	}
	return b, nil
}

// serviceAccount exchanges a JWT signed with a service account's private key for an
// access token at the key's token URI (OAuth 2.0 JWT bearer grant, RFC 7523), and
// keeps it until a minute before it expires.
type serviceAccount struct {
	email, keyID, tokenURI string
	key                    *rsa.PrivateKey
	client                 *http.Client
	now                    func() time.Time

	mu      sync.Mutex
	tok     string
	expires time.Time
}

func loadServiceAccount(path string, client *http.Client) (*serviceAccount, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Type         string `json:"type"`
		ClientEmail  string `json:"client_email"`
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
		TokenURI     string `json:"token_uri"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("not a JSON key file: %v", err)
	}
	if f.Type != "service_account" {
		return nil, fmt.Errorf("type is %q, only service_account key files are supported (or set GOOGLE_OAUTH_ACCESS_TOKEN)", f.Type)
	}
	if f.ClientEmail == "" || f.PrivateKey == "" {
		return nil, fmt.Errorf("client_email or private_key is missing")
	}
	block, _ := pem.Decode([]byte(f.PrivateKey))
	if block == nil {
		return nil, fmt.Errorf("private_key is not PEM")
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private_key is not an RSA key")
		}
		key = rk
	} else if rk, err2 := x509.ParsePKCS1PrivateKey(block.Bytes); err2 == nil {
		key = rk
	} else {
		return nil, fmt.Errorf("private_key does not parse as PKCS#8 or PKCS#1")
	}
	if f.TokenURI == "" {
		f.TokenURI = "https://oauth2.googleapis.com/token"
	}
	return &serviceAccount{email: f.ClientEmail, keyID: f.PrivateKeyID, tokenURI: f.TokenURI, key: key, client: client, now: time.Now}, nil
}

// assertion returns the signed JWT (RS256) asking for gcsScope.
func (s *serviceAccount) assertion(now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	hdr := map[string]string{"alg": "RS256", "typ": "JWT"}
	if s.keyID != "" {
		hdr["kid"] = s.keyID
	}
	h, _ := json.Marshal(hdr)
	c, _ := json.Marshal(map[string]any{"iss": s.email, "scope": gcsScope, "aud": s.tokenURI,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	signing := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

func (s *serviceAccount) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.tok != "" && now.Before(s.expires) {
		return s.tok, nil
	}
	jwt, err := s.assertion(now)
	if err != nil {
		return "", fmt.Errorf("signing the token request: %v", err)
	}
	form := neturl.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {jwt}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.tokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("token URI %s: %v", s.tokenURI, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking %s for an access token: %w", s.tokenURI, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("asking %s for an access token: %w", s.tokenURI, err)
	}
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK || out.AccessToken == "" {
		// The error fields name the problem (invalid_grant, ...); the body is not
		// shown whole, as it could carry a token.
		return "", &Error{Op: "open", URL: s.tokenURI, Status: resp.StatusCode,
			Err: fmt.Errorf("no access token for %s: %s %s", s.email, out.Error, out.Description)}
	}
	if out.ExpiresIn <= 0 {
		out.ExpiresIn = 3600
	}
	s.tok = out.AccessToken
	s.expires = now.Add(time.Duration(out.ExpiresIn)*time.Second - time.Minute)
	return s.tok, nil
}

// splitGS splits gs://bucket/object.
func splitGS(op, url string) (bucket, object string, err error) {
	rest := url[len("gs://"):]
	if strings.ContainsAny(rest, "?#") {
		return "", "", &Error{Op: op, URL: url, Err: fmt.Errorf("%w: gs:// URLs take no query", ErrBadURL)}
	}
	bucket, object, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", &Error{Op: op, URL: url, Err: fmt.Errorf("%w: no bucket (expected gs://bucket/object)", ErrBadURL)}
	}
	return bucket, object, nil
}

// request builds an authorized JSON API request: path is escaped already.
func (b *gcsBackend) request(ctx context.Context, method, path string, q neturl.Values) (*http.Request, error) {
	raw := b.endpoint + path
	if len(q) > 0 {
		raw += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, raw, nil)
	if err != nil {
		return nil, err
	}
	if b.tokens != nil {
		tok, err := b.tokens.token(ctx)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

func objectPath(bucket, object string) string {
	return "/storage/v1/b/" + neturl.PathEscape(bucket) + "/o/" + neturl.PathEscape(object)
}

// The version of a GCS object is its generation: it stands for the ETag here (in
// listings, opens and reads). Conditions are ifGenerationMatch and
// ifGenerationNotMatch, which GCS honours on media downloads (412, 304); the
// generation each download answers (x-goog-generation) is checked too, for servers
// that ignore them (fake-gcs-server).

func genETag(gen string) string {
	if gen == "" {
		return ""
	}
	return `"` + gen + `"`
}

func etagGen(etag string) string { return strings.Trim(etag, `"`) }

// tokenError wraps a failure to get an access token.
func tokenError(op, url string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Op: op, URL: url, Status: e.Status, Err: err}
	}
	return &Error{Op: op, URL: url, Err: err}
}

func (b *gcsBackend) stat(ctx context.Context, url string) (ObjectInfo, error) {
	bucket, object, err := splitGS("open", url)
	if err != nil {
		return ObjectInfo{}, err
	}
	if object == "" {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("%w: no object name after the bucket", ErrBadURL)}
	}
	req, err := b.request(ctx, http.MethodGet, objectPath(bucket, object), nil)
	if err != nil {
		return ObjectInfo{}, tokenError("open", url, err)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: err}
	}
	defer resp.Body.Close()
	if err := statusError("open", url, resp.StatusCode); err != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return ObjectInfo{}, err
	}
	var meta gcsObject
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &meta)
	}
	if err != nil {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("reading the object's metadata: %v", err)}
	}
	size, err := strconv.ParseInt(meta.Size, 10, 64)
	if err != nil || size < 0 {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("bad object size %q", meta.Size)}
	}
	return ObjectInfo{URL: url, Size: size, ETag: genETag(meta.Generation)}, nil
}

func (b *gcsBackend) get(ctx context.Context, url string, r getRequest) (*getResponse, error) {
	bucket, object, err := splitGS("get", url)
	if err != nil {
		return nil, err
	}
	q := neturl.Values{"alt": {"media"}}
	if r.IfMatch != "" {
		q.Set("ifGenerationMatch", etagGen(r.IfMatch))
	}
	if r.IfNoneMatch != "" {
		q.Set("ifGenerationNotMatch", etagGen(r.IfNoneMatch))
	}
	req, err := b.request(ctx, http.MethodGet, objectPath(bucket, object), q)
	if err != nil {
		return nil, tokenError("get", url, err)
	}
	if rng := rangeHeader(r.Off, r.Len); rng != "" {
		req.Header.Set("Range", rng)
	}
	return doGet(b.client, req, url, func(resp *http.Response, out *getResponse, e *Error) {
		if out != nil {
			out.ETag = genETag(resp.Header.Get("X-Goog-Generation"))
			if out.ETag == "" && r.IfMatch != "" {
				out.ETag = r.IfMatch // the condition held
			}
		}
	})
}

type gcsObject struct {
	Name       string `json:"name"`
	Size       string `json:"size"`
	Generation string `json:"generation"`
}

func (b *gcsBackend) list(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	bucket, object, err := splitGS("list", prefix)
	if err != nil {
		return nil, err
	}
	var out []ObjectInfo
	token := ""
	seen := map[string]bool{}
	timeout := pageTimeout(ctx)
	for {
		// Only the fields read here (GCS answers full metadata otherwise).
		q := neturl.Values{"fields": {"items(name,size,generation),nextPageToken"}}
		if object != "" {
			q.Set("prefix", object)
		}
		if token != "" {
			q.Set("pageToken", token)
		}
		if b.pageSize > 0 {
			q.Set("maxResults", strconv.Itoa(b.pageSize))
		}
		var page struct {
			Items         []gcsObject `json:"items"`
			NextPageToken string      `json:"nextPageToken"`
		}
		err := fetchListPage(ctx, timeout, prefix, &page, false, func(pctx context.Context) (*http.Request, error) {
			req, err := b.request(pctx, http.MethodGet, "/storage/v1/b/"+neturl.PathEscape(bucket)+"/o", q)
			if err != nil {
				return nil, tokenError("list", prefix, err)
			}
			return req, nil
		}, b.client, nil)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Items {
			if strings.HasSuffix(o.Name, "/") { // a "directory" placeholder
				continue
			}
			size, err := strconv.ParseInt(o.Size, 10, 64)
			if err != nil || size < 0 {
				return nil, &Error{Op: "list", URL: prefix, Err: fmt.Errorf("malformed listing: object %q has size %q", o.Name, o.Size)}
			}
			out = append(out, ObjectInfo{URL: "gs://" + bucket + "/" + o.Name, Size: size, ETag: genETag(o.Generation)})
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		if seen[page.NextPageToken] {
			return nil, &Error{Op: "list", URL: prefix, Err: fmt.Errorf("the server repeated a page token")}
		}
		seen[page.NextPageToken] = true
		token = page.NextPageToken
	}
}
