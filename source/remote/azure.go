package remote

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AzureOptions overrides what the environment gives for az:// URLs (doc.go). Empty
// fields keep it.
type AzureOptions struct {
	// Endpoint is the Blob service's base URL: https://ACCOUNT.blob.core.windows.net,
	// a sovereign cloud's, or an emulator's (http://127.0.0.1:10000/devstoreaccount1).
	Endpoint string
	Account  string
	// PageSize is List Blobs' maxresults (0: the server's default, 5000 on Azure).
	PageSize int
}

// azureVersion is the x-ms-version sent: Shared Key and bearer tokens both need
// 2017-11-09 or later; Azurite accepts it.
const azureVersion = "2021-08-06"

// azureDevKey is the well-known account key of the Azure storage emulators
// (UseDevelopmentStorage=true); it is public, not a secret.
const azureDevKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// azureHostSuffixes are the Blob endpoints' host names in Azure's public and
// sovereign clouds: https URLs on them are read through the Azure backend (listing,
// credentials from the environment).
var azureHostSuffixes = []string{".blob.core.windows.net", ".blob.core.chinacloudapi.cn", ".blob.core.usgovcloudapi.net", ".blob.core.cloudapi.de"}

// isAzureHost reports whether an http(s) URL names an Azure Blob endpoint.
func isAzureHost(url string) bool {
	u, err := neturl.Parse(url)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	for _, s := range azureHostSuffixes {
		if strings.HasSuffix(h, s) && len(h) > len(s) {
			return true
		}
	}
	return false
}

type azureBackend struct {
	client    *http.Client
	transport *http.Transport
	endpoint  string // base URL without a trailing slash, "" when only https URLs work
	account   string
	key       []byte        // Shared Key, nil if none
	sas       neturl.Values // SAS token's parameters, nil if none
	token     string        // bearer token, "" if none
	pageSize  int
	now       func() time.Time
}

// parseConnectionString splits Key=Value;Key=Value (values may hold '=').
func parseConnectionString(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k != "" {
			out[strings.ToLower(k)] = v
		}
	}
	return out
}

func newAzureBackend(o AzureOptions, maxConns int) (*azureBackend, error) {
	tr := newTransport(maxConns)
	b := &azureBackend{client: &http.Client{Transport: tr}, transport: tr, pageSize: o.PageSize, now: time.Now}
	bad := func(format string, a ...any) error {
		return &Error{Op: "open", URL: "az://", Err: fmt.Errorf(format, a...)}
	}
	account, keyText, sas := os.Getenv("AZURE_STORAGE_ACCOUNT"), os.Getenv("AZURE_STORAGE_KEY"), os.Getenv("AZURE_STORAGE_SAS_TOKEN")
	endpoint := os.Getenv("AZURE_STORAGE_SERVICE_ENDPOINT")
	suffix, protocol := "core.windows.net", "https"
	if cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); cs != "" {
		// As Azure's tools do, a connection string overrides the account and key.
		m := parseConnectionString(cs)
		if v, _ := parseBool(m["usedevelopmentstorage"]); v {
			account, keyText, endpoint = "devstoreaccount1", azureDevKey, "http://127.0.0.1:10000/devstoreaccount1"
		}
		if v := m["accountname"]; v != "" {
			account = v
		}
		if v := m["accountkey"]; v != "" {
			keyText = v
		}
		if v := m["sharedaccesssignature"]; v != "" {
			sas = v
		}
		if v := m["blobendpoint"]; v != "" {
			endpoint = v
		}
		if v := m["endpointsuffix"]; v != "" {
			suffix = v
		}
		if v := m["defaultendpointsprotocol"]; v != "" {
			protocol = v
		}
	}
	if o.Account != "" {
		account = o.Account
	}
	if o.Endpoint != "" {
		endpoint = o.Endpoint
	}
	if endpoint == "" && account != "" {
		endpoint = protocol + "://" + account + ".blob." + suffix
	}
	if endpoint != "" {
		u, err := neturl.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, bad("the Blob endpoint %q is not an http(s) URL (AZURE_STORAGE_SERVICE_ENDPOINT, BlobEndpoint, AzureOptions.Endpoint)", endpoint)
		}
		endpoint = strings.TrimRight(endpoint, "/")
		if account == "" {
			// The account is the host's first label on Azure, else the first path
			// segment (an emulator's path-style URL).
			if h := u.Hostname(); isAzureHost("https://" + h) {
				account, _, _ = strings.Cut(h, ".")
			} else if seg, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/"); seg != "" {
				account = seg
			}
		}
	}
	b.endpoint, b.account = endpoint, account
	if keyText != "" {
		k, err := decodeKey(keyText)
		if err != nil {
			return nil, bad("the account key (AZURE_STORAGE_KEY or AccountKey) is not base64")
		}
		b.key = k
	}
	if sas = strings.TrimPrefix(strings.TrimSpace(sas), "?"); sas != "" {
		v, err := neturl.ParseQuery(sas)
		if err != nil || v.Get("sig") == "" {
			return nil, bad("the SAS token (AZURE_STORAGE_SAS_TOKEN or SharedAccessSignature) has no sig parameter")
		}
		b.sas = v
	}
	b.token = strings.TrimSpace(os.Getenv("GODALI_AZURE_STORAGE_TOKEN"))
	return b, nil
}

func decodeKey(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimSpace(s))
}

// target is one request's URL and how it is authorized.
type azureTarget struct {
	container, blob string
	base            string // the endpoint
	account         string
	query           neturl.Values // the URL's own SAS, nil if none
	https           bool          // given as an https URL: objects listed keep that form
}

// parse maps az://container/blob or https://ACCOUNT.blob.core.windows.net/container/blob
// (with or without a SAS query) to its parts.
func (b *azureBackend) parse(op, url string) (azureTarget, error) {
	bad := func(format string, a ...any) (azureTarget, error) {
		return azureTarget{}, &Error{Op: op, URL: url, Err: fmt.Errorf("%w: "+format, append([]any{ErrBadURL}, a...)...)}
	}
	if strings.EqualFold(scheme(url), "az") {
		rest := url[len("az://"):]
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			return bad("az:// URLs take no query (give a SAS token in AZURE_STORAGE_SAS_TOKEN)")
		}
		container, blob, _ := strings.Cut(rest, "/")
		if container == "" {
			return bad("no container (expected az://container/path)")
		}
		if b.endpoint == "" {
			return azureTarget{}, &Error{Op: op, URL: url, Err: errors.New("no storage account: set AZURE_STORAGE_ACCOUNT or AZURE_STORAGE_CONNECTION_STRING (or AZURE_STORAGE_SERVICE_ENDPOINT)")}
		}
		return azureTarget{container: container, blob: blob, base: b.endpoint, account: b.account}, nil
	}
	u, err := neturl.Parse(url)
	if err != nil || u.Host == "" {
		return bad("%v", err)
	}
	container, blob, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if container == "" {
		return bad("no container (expected https://ACCOUNT.blob.core.windows.net/container/path)")
	}
	account, _, _ := strings.Cut(u.Hostname(), ".")
	t := azureTarget{container: container, blob: blob, base: u.Scheme + "://" + u.Host, account: account, https: true}
	if u.RawQuery != "" {
		t.query = u.Query()
	}
	return t, nil
}

// escapeBlob percent-encodes a blob name for the URL path, keeping its '/'.
func escapeBlob(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = neturl.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// request builds an authorized request for t; query holds the operation's
// parameters (nil for a blob read) and header its headers, which are signed.
func (b *azureBackend) request(ctx context.Context, method string, t azureTarget, path string, query neturl.Values, header http.Header) (*http.Request, error) {
	q := neturl.Values{}
	for k, v := range query {
		q[k] = v
	}
	auth := ""
	switch {
	case t.query != nil: // a SAS URL: its signature authorizes, nothing else
		for k, v := range t.query {
			q[k] = v
		}
	case b.sas != nil:
		for k, v := range b.sas {
			q[k] = v
		}
	case b.token != "":
		auth = "Bearer " + b.token
	case b.key != nil && strings.EqualFold(t.account, b.account):
		auth = "SharedKey"
	}
	raw := t.base + path
	if len(q) > 0 {
		raw += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, raw, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("x-ms-version", azureVersion)
	req.Header.Set("x-ms-date", b.now().UTC().Format(http.TimeFormat))
	switch auth {
	case "SharedKey":
		req.Header.Set("Authorization", "SharedKey "+b.account+":"+azureSign(b.key, b.account, req))
	case "":
	default:
		req.Header.Set("Authorization", auth)
	}
	return req, nil
}

// azureSign returns the Shared Key signature of req (Blob service, version
// 2009-09-19 and later): the base64 HMAC-SHA256, under the account key, of the verb,
// the standard headers, the canonicalized x-ms-* headers and the canonicalized
// resource.
func azureSign(key []byte, account string, req *http.Request) string {
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, azureStringToSign(account, req))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func azureStringToSign(account string, req *http.Request) string {
	h := req.Header
	length := h.Get("Content-Length")
	if length == "0" {
		length = ""
	}
	var sb strings.Builder
	for _, v := range []string{req.Method, h.Get("Content-Encoding"), h.Get("Content-Language"), length,
		h.Get("Content-MD5"), h.Get("Content-Type"), "" /* Date: x-ms-date is sent */, h.Get("If-Modified-Since"),
		h.Get("If-Match"), h.Get("If-None-Match"), h.Get("If-Unmodified-Since"), h.Get("Range")} {
		sb.WriteString(v)
		sb.WriteByte('\n')
	}
	// Canonicalized headers: every x-ms-* header, lower-case, sorted, name:value.
	var names []string
	for k := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			names = append(names, lk)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		sb.WriteString(n)
		sb.WriteByte(':')
		sb.WriteString(strings.Join(strings.Fields(strings.Join(h.Values(n), ",")), " "))
		sb.WriteByte('\n')
	}
	// Canonicalized resource: /account/path, then each query parameter (lower-case
	// name, decoded values sorted and joined by commas) on a line of its own.
	sb.WriteString("/" + account + req.URL.EscapedPath())
	q := req.URL.Query()
	params := make([]string, 0, len(q))
	lower := map[string][]string{}
	for k, v := range q {
		lk := strings.ToLower(k)
		if _, ok := lower[lk]; !ok {
			params = append(params, lk)
		}
		lower[lk] = append(lower[lk], v...)
	}
	sort.Strings(params)
	for _, p := range params {
		v := lower[p]
		sort.Strings(v)
		sb.WriteString("\n" + p + ":" + strings.Join(v, ","))
	}
	return sb.String()
}

// azureDecorate adds Azure's error code (x-ms-error-code) to a failed answer's error.
func azureDecorate(resp *http.Response, _ *getResponse, e *Error) {
	if e == nil {
		return
	}
	if code := resp.Header.Get("x-ms-error-code"); code != "" && !errors.Is(e.Err, ErrNotFound) && !errors.Is(e.Err, ErrChanged) {
		e.Err = fmt.Errorf("%w (%s)", e.Err, code)
	}
}

func (b *azureBackend) blobPath(t azureTarget) string {
	return "/" + neturl.PathEscape(t.container) + "/" + escapeBlob(t.blob)
}

func (b *azureBackend) stat(ctx context.Context, url string) (ObjectInfo, error) {
	t, err := b.parse("open", url)
	if err != nil {
		return ObjectInfo{}, err
	}
	if t.blob == "" {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("%w: no blob name after the container", ErrBadURL)}
	}
	req, err := b.request(ctx, http.MethodHead, t, b.blobPath(t), nil, nil)
	if err != nil {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("%w: %v", ErrBadURL, err)}
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: err}
	}
	resp.Body.Close()
	if err := statusError("open", url, resp.StatusCode); err != nil {
		azureDecorate(resp, nil, err.(*Error))
		return ObjectInfo{}, err
	}
	if resp.ContentLength < 0 {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("server reports no blob size")}
	}
	return ObjectInfo{URL: url, Size: resp.ContentLength, ETag: resp.Header.Get("ETag")}, nil
}

func (b *azureBackend) get(ctx context.Context, url string, r getRequest) (*getResponse, error) {
	t, err := b.parse("get", url)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if rng := rangeHeader(r.Off, r.Len); rng != "" {
		h.Set("Range", rng)
	}
	if r.IfMatch != "" {
		h.Set("If-Match", r.IfMatch)
	}
	if r.IfNoneMatch != "" {
		h.Set("If-None-Match", r.IfNoneMatch)
	}
	req, err := b.request(ctx, http.MethodGet, t, b.blobPath(t), nil, h)
	if err != nil {
		return nil, &Error{Op: "get", URL: url, Err: fmt.Errorf("%w: %v", ErrBadURL, err)}
	}
	return doGet(b.client, req, url, azureDecorate)
}

// azureList is the part of List Blobs' answer read here.
type azureList struct {
	Blobs []struct {
		Name       string `xml:"Name"`
		Properties struct {
			Length int64  `xml:"Content-Length"`
			ETag   string `xml:"Etag"`
		} `xml:"Properties"`
	} `xml:"Blobs>Blob"`
	NextMarker string `xml:"NextMarker"`
}

func (b *azureBackend) list(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	t, err := b.parse("list", prefix)
	if err != nil {
		return nil, err
	}
	var out []ObjectInfo
	marker := ""
	seen := map[string]bool{}
	timeout := pageTimeout(ctx)
	for {
		q := neturl.Values{"restype": {"container"}, "comp": {"list"}}
		if t.blob != "" {
			q.Set("prefix", t.blob)
		}
		if marker != "" {
			q.Set("marker", marker)
		}
		if b.pageSize > 0 {
			q.Set("maxresults", strconv.Itoa(b.pageSize))
		}
		var page azureList
		err := b.listPage(ctx, timeout, t, q, prefix, &page)
		if err != nil {
			return nil, err
		}
		for _, bl := range page.Blobs {
			if strings.HasSuffix(bl.Name, "/") { // a "directory" marker, not data
				continue
			}
			out = append(out, ObjectInfo{URL: b.objectURL(t, bl.Name), Size: bl.Properties.Length, ETag: quoteETag(bl.Properties.ETag)})
		}
		if page.NextMarker == "" {
			return out, nil
		}
		if seen[page.NextMarker] { // the same marker again would list forever
			return nil, &Error{Op: "list", URL: prefix, Err: fmt.Errorf("the server repeated a continuation marker")}
		}
		seen[page.NextMarker] = true
		marker = page.NextMarker
	}
}

// listPage requests one page of a listing, bounded by timeout (0: none).
func (b *azureBackend) listPage(ctx context.Context, timeout time.Duration, t azureTarget, q neturl.Values, prefix string, page any) error {
	return fetchListPage(ctx, timeout, prefix, page, true, func(pctx context.Context) (*http.Request, error) {
		return b.request(pctx, http.MethodGet, t, "/"+neturl.PathEscape(t.container), q, nil)
	}, b.client, azureDecorate)
}

// objectURL is the URL of a listed blob, in the form the listing was asked in.
func (b *azureBackend) objectURL(t azureTarget, name string) string {
	if !t.https {
		return "az://" + t.container + "/" + name
	}
	u := t.base + "/" + neturl.PathEscape(t.container) + "/" + escapeBlob(name)
	if t.query != nil {
		u += "?" + t.query.Encode()
	}
	return u
}

// quoteETag puts a listing's bare ETag in quotes, as HEAD and GET answer it.
func quoteETag(e string) string {
	if e == "" || strings.HasPrefix(e, `"`) || strings.HasPrefix(e, "W/") {
		return e
	}
	return `"` + e + `"`
}
