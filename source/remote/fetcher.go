package remote

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// RetryPolicy bounds the retries of one request. Failures that can pass (HTTP 5xx,
// 408, 429, timeouts, connection resets, bodies cut short) are retried with
// exponential backoff and jitter; others (404, 403, 412, other 4xx) fail at once.
type RetryPolicy struct {
	MaxAttempts int           // attempts per request, the first included (default 5)
	BaseDelay   time.Duration // delay before the second attempt (default 50 ms), doubled each time
	MaxDelay    time.Duration // cap on one delay (default 2 s)
}

// FetchOptions configures a Fetcher; zero fields take the defaults in brackets.
type FetchOptions struct {
	// Concurrency is io_concurrency: the number of requests in flight, each served
	// by one goroutine of the stream's pool (32).
	Concurrency int
	// ReadAhead is how many objects past the one the consumer waits for may be
	// fetched or buffered (2 x Concurrency). Memory is about ReadAhead x object size.
	ReadAhead int
	// ChunkSize is the size of one ranged request: larger objects are read as
	// several chunks in parallel (8 MiB).
	ChunkSize int64
	// MaxObjectSize refuses larger objects with ErrTooLarge (2 GiB); shards larger
	// than that are read with Fetcher.OpenReader.
	MaxObjectSize int64
	// AttemptTimeout bounds one attempt of every request (HEAD, ranged GET, listing
	// page), body included (30 s). A server that never answers costs at most
	// Retry.MaxAttempts x AttemptTimeout plus the backoff delays, then an *Error naming
	// the URL.
	AttemptTimeout time.Duration
	Retry          RetryPolicy
	// Cache, if set, serves repeated reads of remote objects from local disk.
	Cache *Cache
}

// DefaultConcurrency is the default io_concurrency.
const DefaultConcurrency = 32

func (o *FetchOptions) fill() {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.ReadAhead <= 0 {
		o.ReadAhead = 2 * o.Concurrency
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 8 << 20
	}
	if o.MaxObjectSize <= 0 {
		o.MaxObjectSize = 2 << 30
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 30 * time.Second
	}
	if o.Retry.MaxAttempts <= 0 {
		o.Retry.MaxAttempts = 5
	}
	if o.Retry.BaseDelay <= 0 {
		o.Retry.BaseDelay = 50 * time.Millisecond
	}
	if o.Retry.MaxDelay <= 0 {
		o.Retry.MaxDelay = 2 * time.Second
	}
}

// Fetcher reads objects of a Store with many requests in flight, in the caller's
// order, with retries and an optional disk cache. It is safe for concurrent use;
// each Stream or reader has its own goroutines, which end with it.
type Fetcher struct {
	store *Store
	opts  FetchOptions

	requests  atomic.Int64
	retries   atomic.Int64
	cacheHits atomic.Int64
}

// FetchStats counts a Fetcher's work since it was made.
type FetchStats struct {
	Requests  int64 // GET requests sent, retries included
	Retries   int64 // of which retries
	CacheHits int64 // objects served from the cache
}

// NewFetcher returns a Fetcher reading through store.
func NewFetcher(store *Store, opts FetchOptions) *Fetcher {
	opts.fill()
	return &Fetcher{store: store, opts: opts}
}

// Options returns the options in force, defaults filled in.
func (f *Fetcher) Options() FetchOptions { return f.opts }

// Stats returns the counters.
func (f *Fetcher) Stats() FetchStats {
	return FetchStats{Requests: f.requests.Load(), Retries: f.retries.Load(), CacheHits: f.cacheHits.Load()}
}

// Result is one fetched object. Err, when set, names the object URL; the stream goes
// on with the next object.
type Result struct {
	Index     int        // position in the list given to Stream
	Info      ObjectInfo // URL, and Size and ETag as read
	Data      []byte
	FromCache bool
	Err       error
}

// piece is one unit a stream delivers: a whole object, or one byte range of it.
type piece struct {
	info   ObjectInfo
	off, n int64
	whole  bool
}

type slot struct {
	data      []byte
	info      ObjectInfo
	pending   int // chunk requests not finished
	done      bool
	err       error
	fromCache bool
}

type task struct {
	idx   int
	off   int64
	n     int64
	first bool
}

type taskHeap []task

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if h[i].idx != h[j].idx {
		return h[i].idx < h[j].idx
	}
	return h[i].off < h[j].off
}
func (h taskHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *taskHeap) Push(x any)   { *h = append(*h, x.(task)) }
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// Stream delivers objects in the order given while fetching ahead. Always Close it.
type Stream struct {
	f         *Fetcher
	ctx       context.Context
	cancel    context.CancelFunc
	stopWake  func() bool
	wg        sync.WaitGroup
	items     []piece
	readAhead int
	maxSize   int64 // whole objects larger than this are refused before they are read

	mu      sync.Mutex
	cond    *sync.Cond
	slots   []*slot
	tasks   taskHeap
	next    int // index the consumer waits for
	started int // items whose first request has been handed out
	running int // tasks being run
	err     error
	closed  bool
}

// Stream starts fetching items (only URL is needed; a known ETag lets the cache be
// checked without a request) and returns them in order through Next.
func (f *Fetcher) Stream(ctx context.Context, items []ObjectInfo) *Stream {
	ps := make([]piece, len(items))
	for i, it := range items {
		ps[i] = piece{info: it, whole: true}
	}
	return f.stream(ctx, ps, f.opts.ReadAhead, f.opts.MaxObjectSize)
}

// StreamUpTo is Stream refusing objects larger than max bytes (when max > 0 and below
// FetchOptions.MaxObjectSize) with ErrTooLarge, from the size the first response
// gives, before their bodies are read: a reader's max_file_bytes.
func (f *Fetcher) StreamUpTo(ctx context.Context, items []ObjectInfo, max int64) *Stream {
	ps := make([]piece, len(items))
	for i, it := range items {
		ps[i] = piece{info: it, whole: true}
	}
	limit := f.opts.MaxObjectSize
	if max > 0 && max < limit {
		limit = max
	}
	return f.stream(ctx, ps, f.opts.ReadAhead, limit)
}

func (f *Fetcher) stream(ctx context.Context, items []piece, readAhead int, maxSize int64) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{f: f, ctx: ctx, cancel: cancel, items: items, readAhead: readAhead, maxSize: maxSize, slots: make([]*slot, len(items))}
	s.cond = sync.NewCond(&s.mu)
	s.stopWake = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	workers := min(f.opts.Concurrency, max(len(items), 1))
	s.wg.Add(workers)
	for range workers {
		go s.worker()
	}
	return s
}

// Next waits for the next object in order. It returns false at the end or when the
// context is cancelled (then Err says why).
func (s *Stream) Next() (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.items) || s.closed {
		return Result{}, false
	}
	for {
		if sl := s.slots[s.next]; sl != nil && sl.done {
			r := Result{Index: s.next, Info: sl.info, Data: sl.data, FromCache: sl.fromCache, Err: sl.err}
			if r.Err != nil {
				r.Data = nil
			}
			s.slots[s.next] = nil
			s.next++
			s.cond.Broadcast() // the window moved
			return r, true
		}
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return Result{}, false
		}
		s.cond.Wait()
	}
}

// Err returns the context's error when Next stopped early, nil otherwise.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops all requests and waits for the stream's goroutines to end.
func (s *Stream) Close() {
	s.cancel()
	s.wg.Wait()
	s.stopWake()
	s.mu.Lock()
	s.closed = true
	s.slots = nil
	s.mu.Unlock()
}

func (s *Stream) take() (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.ctx.Err() != nil {
			return task{}, false
		}
		if s.tasks.Len() > 0 {
			s.running++
			return heap.Pop(&s.tasks).(task), true
		}
		if s.started < len(s.items) && s.started < s.next+s.readAhead {
			i := s.started
			s.started++
			s.slots[i] = &slot{info: s.items[i].info}
			s.running++
			return task{idx: i, first: true}, true
		}
		if s.started == len(s.items) && s.running == 0 {
			return task{}, false
		}
		s.cond.Wait()
	}
}

func (s *Stream) worker() {
	defer s.wg.Done()
	for {
		t, ok := s.take()
		if !ok {
			return
		}
		if t.first {
			s.runFirst(t.idx)
		} else {
			s.runChunk(t)
		}
		s.mu.Lock()
		s.running--
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// finish records the outcome of an item's last request.
func (s *Stream) finish(idx int, fn func(sl *slot)) {
	s.mu.Lock()
	if sl := s.slots[idx]; sl != nil {
		fn(sl)
		sl.done = true
	}
	s.mu.Unlock()
}

func (s *Stream) fail(idx int, err error) {
	s.finish(idx, func(sl *slot) { sl.err = err })
}

// runFirst makes an item's first request. For a whole object it asks for the first
// chunk: that is the whole of a small object in one request, and gives the size
// (Content-Range) of a large one, whose other chunks are then queued.
func (s *Stream) runFirst(idx int) {
	it := s.items[idx]
	url := it.info.URL
	if !it.whole {
		var data []byte
		var etag string
		err := s.retry(url, func(ctx context.Context) error {
			buf, tag, err := s.readRange(ctx, url, it.off, it.n, strongETag(it.info.ETag))
			data, etag = buf, tag
			return err
		})
		if err != nil {
			s.fail(idx, err)
			return
		}
		s.finish(idx, func(sl *slot) { sl.data, sl.info.ETag = data, etag })
		return
	}

	var hit *cached
	cache := s.f.opts.Cache
	if cache != nil && IsRemote(url) {
		hit = cache.lookup(url)
	}
	if hit != nil {
		defer hit.Close()
		if it.info.ETag != "" && it.info.ETag == hit.etag {
			if s.serveCached(idx, hit) {
				return
			}
			hit = nil // damaged at rest: fetch it again
		}
	}
	s.fetchWhole(idx, hit)
}

// fetchWhole fetches a whole object, asking the server whether hit (the cached copy,
// nil if none) is current.
func (s *Stream) fetchWhole(idx int, hit *cached) {
	it := s.items[idx]
	url := it.info.URL
	cache := s.f.opts.Cache
	ifNoneMatch := ""
	if hit != nil && it.info.ETag == "" {
		ifNoneMatch = hit.etag // ask the server whether our copy is current
	}
	chunk := s.f.opts.ChunkSize
	var (
		data        []byte
		total, got  int64
		etag        string
		notModified bool
	)
	err := s.retry(url, func(ctx context.Context) error {
		s.f.requests.Add(1)
		resp, err := s.f.store.get(ctx, url, getRequest{Off: 0, Len: chunk, IfNoneMatch: ifNoneMatch})
		if err != nil {
			return err
		}
		etag = resp.ETag
		switch {
		case resp.NotModified:
			notModified = true
			return nil
		case resp.Unsatisfiable: // a range past the end of an empty object
			data, total, got = []byte{}, 0, 0
			if etag == "" {
				// Azure answers 416 without an ETag: keep the listing's, so that the
				// cached copy of an empty object is recognised as current.
				etag = it.info.ETag
			}
			return nil
		}
		defer resp.Body.Close()
		if !resp.Partial { // the whole object, whatever was asked
			buf, err := readBody(resp.Body, url, resp.Len, s.maxSize)
			data, total, got = buf, int64(len(buf)), int64(len(buf))
			return err
		}
		if resp.Off != 0 || resp.Total < 0 {
			return &Error{Op: "get", URL: url, Err: fmt.Errorf("server answered bytes from %d of total %d to a request for the first chunk", resp.Off, resp.Total)}
		}
		if resp.Total > s.maxSize {
			return &Error{Op: "get", URL: url, Err: fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLarge, resp.Total, s.maxSize)}
		}
		n := min(chunk, resp.Total)
		if resp.Len >= 0 && resp.Len != n {
			return &Error{Op: "get", URL: url, Err: fmt.Errorf("server sent %d bytes for the first %d", resp.Len, n)}
		}
		buf := make([]byte, resp.Total)
		if _, err := io.ReadFull(resp.Body, buf[:n]); err != nil {
			return err
		}
		data, total, got = buf, resp.Total, n
		return nil
	})
	if err != nil {
		s.fail(idx, err)
		return
	}
	if notModified {
		if hit == nil { // a 304 to a request that was not conditional
			s.fail(idx, &Error{Op: "get", URL: url, Status: 304, Err: fmt.Errorf("unexpected 304 Not Modified to an unconditional request")})
			return
		}
		if !s.serveCached(idx, hit) {
			s.fetchWhole(idx, nil) // the current copy was damaged at rest
		}
		return
	}
	if got == total {
		if cache != nil && IsRemote(url) {
			cache.put(url, etag, data)
		}
		s.finish(idx, func(sl *slot) { sl.data, sl.info.Size, sl.info.ETag = data, total, etag })
		return
	}
	s.mu.Lock()
	sl := s.slots[idx]
	sl.data, sl.info.Size, sl.info.ETag = data, total, etag
	for off := got; off < total; off += chunk {
		heap.Push(&s.tasks, task{idx: idx, off: off, n: min(chunk, total-off)})
		sl.pending++
	}
	s.cond.Broadcast()
	s.mu.Unlock()
}

// serveCached delivers the cached copy, or returns false (and drops the entry) when
// it cannot be read or fails its checksum: the caller fetches the object again.
func (s *Stream) serveCached(idx int, hit *cached) bool {
	if hit.size > s.maxSize {
		s.fail(idx, &Error{Op: "get", URL: s.items[idx].info.URL, Err: fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLarge, hit.size, s.maxSize)})
		return true
	}
	buf := make([]byte, hit.size)
	if _, err := io.ReadFull(hit.reader(), buf); err != nil || !hit.matches(buf) {
		s.f.opts.Cache.discard(hit)
		return false
	}
	s.f.cacheHits.Add(1)
	s.finish(idx, func(sl *slot) { sl.data, sl.info.Size, sl.info.ETag, sl.fromCache = buf, hit.size, hit.etag, true })
	return true
}

// runChunk reads one more chunk of a large object into its buffer.
func (s *Stream) runChunk(t task) {
	s.mu.Lock()
	sl := s.slots[t.idx]
	failed := sl == nil || sl.err != nil
	var buf []byte
	var etag, url string
	if !failed {
		buf, etag, url = sl.data[t.off:t.off+t.n], sl.info.ETag, sl.info.URL
	}
	s.mu.Unlock()
	var err error
	if !failed {
		err = s.retry(url, func(ctx context.Context) error {
			return s.readRangeInto(ctx, url, t.off, buf, strongETag(etag))
		})
	}
	s.mu.Lock()
	if sl == nil {
		s.mu.Unlock()
		return
	}
	if err != nil && sl.err == nil {
		sl.err = err
	}
	sl.pending--
	last := sl.pending == 0
	s.mu.Unlock()
	if !last {
		return
	}
	if sl.err == nil && s.f.opts.Cache != nil && IsRemote(url) {
		s.f.opts.Cache.put(url, etag, sl.data)
	}
	s.mu.Lock()
	sl.done = true
	s.mu.Unlock()
}

// readRange reads exactly [off, off+n).
func (s *Stream) readRange(ctx context.Context, url string, off, n int64, ifMatch string) ([]byte, string, error) {
	buf := make([]byte, n)
	var etag string
	err := s.readRangeTagged(ctx, url, off, buf, ifMatch, &etag)
	return buf, etag, err
}

func (s *Stream) readRangeInto(ctx context.Context, url string, off int64, buf []byte, ifMatch string) error {
	return s.readRangeTagged(ctx, url, off, buf, ifMatch, nil)
}

func (s *Stream) readRangeTagged(ctx context.Context, url string, off int64, buf []byte, ifMatch string, etag *string) error {
	s.f.requests.Add(1)
	resp, err := s.f.store.get(ctx, url, getRequest{Off: off, Len: int64(len(buf)), IfMatch: ifMatch})
	if err != nil {
		return err
	}
	if resp.Unsatisfiable || resp.NotModified || resp.Body == nil {
		return &Error{Op: "get", URL: url, Err: fmt.Errorf("%w: bytes %d-%d are past the end", ErrChanged, off, off+int64(len(buf))-1)}
	}
	defer resp.Body.Close()
	if etag != nil {
		*etag = resp.ETag
	}
	if ifMatch != "" && resp.ETag != "" && resp.ETag != ifMatch {
		return &Error{Op: "get", URL: url, Err: fmt.Errorf("%w: ETag %s, expected %s", ErrChanged, resp.ETag, ifMatch)}
	}
	if resp.Off > off {
		return &Error{Op: "get", URL: url, Err: fmt.Errorf("server sent bytes from %d for a request from %d", resp.Off, off)}
	}
	if resp.Off < off { // Range ignored: skip ahead in the full body
		if _, err := io.CopyN(io.Discard, resp.Body, off-resp.Off); err != nil {
			return err
		}
	}
	_, err = io.ReadFull(resp.Body, buf)
	return err
}

// retry runs one request until it succeeds, fails for good, or runs out of attempts.
func (s *Stream) retry(url string, fn func(ctx context.Context) error) error {
	return s.f.retry(s.ctx, url, fn)
}

func (f *Fetcher) retry(ctx context.Context, url string, fn func(ctx context.Context) error) error {
	return f.retryWithin(ctx, url, f.opts.AttemptTimeout, fn)
}

// retryWithin is retry with attempts of at most timeout (0: no bound of its own, for
// an attempt made of several requests that each have theirs, a listing's pages).
func (f *Fetcher) retryWithin(ctx context.Context, url string, timeout time.Duration, fn func(ctx context.Context) error) error {
	p := f.opts.Retry
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithCancel(ctx)
		if timeout > 0 {
			cancel()
			actx, cancel = context.WithTimeout(ctx, timeout)
		}
		err := fn(actx)
		timedOut := actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return stopped(ctx, url, attempt)
		}
		if timedOut {
			err = annotate(err, url, fmt.Sprintf("no complete answer within %v (FetchOptions.AttemptTimeout, io_timeout)", timeout))
		}
		if !retryable(err) || attempt >= p.MaxAttempts {
			return withAttempts(err, url, attempt)
		}
		f.retries.Add(1)
		d := min(p.BaseDelay<<(attempt-1), p.MaxDelay)
		d = d/2 + rand.N(d/2+1) // jitter: spread retries of many requests apart
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return stopped(ctx, url, attempt)
		case <-t.C:
		}
	}
}

// stopped is the error of a request whose context ended (the reader was closed):
// errors.Is(err, context.Canceled) holds, and it names the URL.
func stopped(ctx context.Context, url string, attempts int) error {
	return &Error{Op: "get", URL: url, Attempts: attempts, Err: fmt.Errorf("request stopped: %w", ctx.Err())}
}

// annotate prefixes what err says with why.
func annotate(err error, url, why string) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Err = fmt.Errorf("%s: %w", why, e.Err)
		return &c
	}
	return &Error{Op: "get", URL: url, Err: fmt.Errorf("%s: %w", why, err)}
}

func withAttempts(err error, url string, attempts int) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Attempts = attempts
		if c.Op == "" {
			c.Op = "get"
		}
		return &c
	}
	return &Error{Op: "get", URL: url, Attempts: attempts, Err: err}
}

// retryable tells failures that may pass from those that will not.
func retryable(err error) bool {
	for _, permanent := range []error{ErrNotFound, ErrChanged, ErrTooLarge, ErrUnsupportedScheme, ErrListUnsupported, ErrBadURL, context.Canceled} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	var e *Error
	if errors.As(err, &e) && e.Status != 0 {
		return e.Status >= 500 || e.Status == 408 || e.Status == 429
	}
	// Transport failures: resets, timeouts, refused connections, bodies cut short.
	return true
}

// Get fetches one whole object (with the Fetcher's retries, chunking and cache).
func (f *Fetcher) Get(ctx context.Context, url string) ([]byte, error) {
	s := f.Stream(ctx, Infos(url))
	defer s.Close()
	r, ok := s.Next()
	if !ok {
		return nil, s.Err()
	}
	return r.Data, r.Err
}
