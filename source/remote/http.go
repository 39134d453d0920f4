package remote

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func newTransport(maxConns int) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Transparent gzip would change lengths and break byte ranges.
		DisableCompression: true,
	}
}

type httpBackend struct {
	client *http.Client
}

func (h *httpBackend) list(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return nil, &Error{Op: "list", URL: prefix, Err: ErrListUnsupported}
}

func (h *httpBackend) stat(ctx context.Context, url string) (ObjectInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("%w: %v", ErrBadURL, err)}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return ObjectInfo{}, &Error{Op: "open", URL: url, Err: err}
	}
	resp.Body.Close()
	// A URL presigned for GET (S3, GCS) refuses HEAD, whose signature would differ
	// (403), and some servers do not allow HEAD (405): ask for the first byte instead.
	headRefused := resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusMethodNotAllowed
	if err := statusError("open", url, resp.StatusCode); err != nil && !headRefused {
		return ObjectInfo{}, err
	}
	if resp.ContentLength < 0 || headRefused {
		// Some servers send no length for HEAD: ask for the first byte instead.
		r, err := h.get(ctx, url, getRequest{Off: 0, Len: 1})
		if err != nil {
			return ObjectInfo{}, err
		}
		if r.Body != nil {
			r.Body.Close()
		}
		if r.Total < 0 && !r.Unsatisfiable {
			return ObjectInfo{}, &Error{Op: "open", URL: url, Err: fmt.Errorf("server reports no object size")}
		}
		return ObjectInfo{URL: url, Size: max(r.Total, 0), ETag: r.ETag}, nil
	}
	return ObjectInfo{URL: url, Size: resp.ContentLength, ETag: resp.Header.Get("ETag")}, nil
}

func (h *httpBackend) get(ctx context.Context, url string, r getRequest) (*getResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &Error{Op: "get", URL: url, Err: fmt.Errorf("%w: %v", ErrBadURL, err)}
	}
	if rng := rangeHeader(r.Off, r.Len); rng != "" {
		req.Header.Set("Range", rng)
	}
	if r.IfMatch != "" {
		req.Header.Set("If-Match", r.IfMatch)
	}
	if r.IfNoneMatch != "" {
		req.Header.Set("If-None-Match", r.IfNoneMatch)
	}
	return doGet(h.client, req, url, nil)
}

// doGet sends a GET request and maps its answer to a getResponse; url names the
// object in errors. decorate, if set, may rewrite the answer's ETag and the error of
// a failed status (the stores put their error codes there).
func doGet(client *http.Client, req *http.Request, url string, decorate func(resp *http.Response, out *getResponse, err *Error)) (*getResponse, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, &Error{Op: "get", URL: url, Err: err}
	}
	out := &getResponse{ETag: resp.Header.Get("ETag"), Total: -1, Len: -1}
	if decorate != nil {
		decorate(resp, out, nil)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		out.Body, out.Len, out.Total = resp.Body, resp.ContentLength, resp.ContentLength
		return out, nil
	case http.StatusPartialContent:
		start, _, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok {
			resp.Body.Close()
			return nil, &Error{Op: "get", URL: url, Status: resp.StatusCode, Err: fmt.Errorf("bad Content-Range %q", resp.Header.Get("Content-Range"))}
		}
		out.Body, out.Off, out.Len, out.Total, out.Partial = resp.Body, start, resp.ContentLength, total, true
		return out, nil
	case http.StatusNotModified:
		resp.Body.Close()
		out.NotModified = true
		return out, nil
	case http.StatusRequestedRangeNotSatisfiable:
		resp.Body.Close()
		out.Unsatisfiable = true
		if _, _, total, ok := parseContentRange(resp.Header.Get("Content-Range")); ok {
			out.Total = total
		}
		return out, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	e, _ := statusError("get", url, resp.StatusCode).(*Error)
	if e == nil {
		e = &Error{Op: "get", URL: url, Status: resp.StatusCode, Err: fmt.Errorf("unexpected response %s", resp.Status)}
	}
	if decorate != nil {
		decorate(resp, nil, e)
	}
	return nil, e
}

// statusError maps a failed HTTP status to an *Error, nil for 2xx.
func statusError(op, url string, code int) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusNotFound:
		return &Error{Op: op, URL: url, Status: code, Err: ErrNotFound}
	case code == http.StatusPreconditionFailed:
		return &Error{Op: op, URL: url, Status: code, Err: ErrChanged}
	}
	return &Error{Op: op, URL: url, Status: code, Err: fmt.Errorf("%s", http.StatusText(code))}
}

// rangeHeader returns the Range header value for [off, off+n), "" for the whole object.
func rangeHeader(off, n int64) string {
	switch {
	case n == 0:
		return ""
	case n < 0 && off == 0:
		return ""
	case n < 0:
		return "bytes=" + strconv.FormatInt(off, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)
}

// parseContentRange parses "bytes a-b/total" or "bytes */total"; total is -1 for "*".
func parseContentRange(s string) (start, end, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || t < 0 {
			return 0, 0, 0, false
		}
		total = t
	}
	if rng == "*" {
		return 0, -1, total, true
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start {
		return 0, 0, 0, false
	}
	return start, end, total, true
}

// fetchListPage sends one listing request (made by mk under the page's context),
// checks its status and decodes its XML (isXML) or JSON body into page.
func fetchListPage(ctx context.Context, timeout time.Duration, prefix string, page any, isXML bool,
	mk func(ctx context.Context) (*http.Request, error), client *http.Client, decorate func(*http.Response, *getResponse, *Error)) error {
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		pctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	wrap := func(err error) error {
		if pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = fmt.Errorf("no complete answer within %v for a listing page (FetchOptions.AttemptTimeout, io_timeout): %w", timeout, err)
		}
		return &Error{Op: "list", URL: prefix, Err: err}
	}
	req, err := mk(pctx)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return &Error{Op: "list", URL: prefix, Err: fmt.Errorf("%w: %v", ErrBadURL, err)}
	}
	resp, err := client.Do(req)
	if err != nil {
		return wrap(err)
	}
	defer resp.Body.Close()
	if e := statusError("list", prefix, resp.StatusCode); e != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		if decorate != nil {
			decorate(resp, nil, e.(*Error))
		}
		return e
	}
	// A listing page is small (5000 names at most); bound it all the same.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return wrap(err)
	}
	if isXML {
		err = xml.Unmarshal(body, page)
	} else {
		err = json.Unmarshal(body, page)
	}
	if err != nil {
		return &Error{Op: "list", URL: prefix, Err: fmt.Errorf("malformed listing: %v", err)}
	}
	return nil
}
