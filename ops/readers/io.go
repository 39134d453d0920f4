package readers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
	"github.com/godali/godali/source/remote"
)

// readerIO is where a reader gets its bytes: source.Local for local paths, a
// remote.FS (retries, read-ahead, optional disk cache from the reader's cache_dir and
// cache_size) for s3://, az://, gs:// and http(s):// URLs. The remote side is made on first use.
type readerIO struct {
	args   *engine.Args
	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	store  *remote.Store
	mu     sync.Mutex
	rem    *remote.FS
	err    error
	// ahead holds the objects being fetched ahead, by path, in plan order.
	ahead map[string][]*fetchSlot
	sem   chan struct{} // bounds the ranged reads in flight
	gen   int64         // batches planned
	// shards holds whole remote shards read into memory (readAheadShards), by path.
	shards map[string]*shardBuf
	// fetching counts the goroutines reading ahead (and writing the disk cache): close
	// waits for them, so that nothing writes to cache_dir once the pipeline is gone.
	fetching sync.WaitGroup
	fetchMu  sync.Mutex
	closing  bool
}

// closeWait bounds how long close waits for the reads ahead after cancelling them: a
// request that ignores cancellation must not hang the host's pipeline destroy.
const closeWait = 10 * time.Second

// goFetch runs f as a read-ahead goroutine that close waits for. Once close has begun
// the goroutine is not counted (a WaitGroup may not grow from zero while it is waited
// on); it then finds r.ctx cancelled and ends at once.
func (r *readerIO) goFetch(f func()) {
	r.fetchMu.Lock()
	if r.closing {
		r.fetchMu.Unlock()
		go f()
		return
	}
	r.fetching.Add(1)
	r.fetchMu.Unlock()
	go r.counted(f)
}

// goFetchChild runs f from a goroutine goFetch started: the count is above zero, so
// it may grow while close waits.
func (r *readerIO) goFetchChild(f func()) {
	r.fetching.Add(1)
	go r.counted(f)
}

func (r *readerIO) counted(f func()) {
	defer r.fetching.Done()
	f()
}

func newReaderIO(a *engine.Args) (*readerIO, error) {
	ctx, cancel := context.WithCancel(context.Background())
	return &readerIO{args: a, ctx: ctx, cancel: cancel}, nil
}

// interrupt makes the requests in flight (reads ahead included) return at once and
// later ones fail (engine.Interrupter: the pipeline is closing, or its host was
// interrupted). Every remote request runs under r.ctx.
func (r *readerIO) interrupt() { r.cancel() }

// close stops the requests in flight (reads ahead included) and drops idle
// connections; the reader's pipeline is being destroyed.
func (r *readerIO) close() {
	r.cancel()
	r.fetchMu.Lock()
	r.closing = true
	r.fetchMu.Unlock()
	done := make(chan struct{})
	go func() { r.fetching.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ahead = nil
	r.shards = nil
	if r.store != nil {
		r.store.CloseIdleConnections()
	}
}

func (r *readerIO) src(path string) (source.Source, error) {
	if !remote.IsRemote(path) {
		return source.Local{}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rem != nil || r.err != nil {
		return r.rem, r.err
	}
	a := r.args
	conc := a.Int("io_concurrency")
	dir := a.String("cache_dir")
	size := int64(a.Int("cache_size"))
	if size == 0 {
		size = 10 << 30
	}
	timeout := a.Float("io_timeout")
	if timeout < 0 || timeout != timeout || timeout > 86400 {
		r.err = a.Errorf("io_timeout", "must be between 0 and 86400 seconds, got %g", timeout)
		return nil, r.err
	}
	// Training data is read for hours: more attempts than the Fetcher's default before
	// a sample fails.
	opts := remote.FetchOptions{Concurrency: conc, Retry: remote.RetryPolicy{MaxAttempts: 8},
		AttemptTimeout: time.Duration(timeout * float64(time.Second))}
	if dir != "" {
		c, err := remote.OpenCache(dir, size)
		if err != nil {
			r.err = argPathErrorf(a, "cache_dir", dir, "%v", err)
			return nil, r.err
		}
		opts.Cache = c
	}
	store := remote.NewStore(remote.Options{MaxConnsPerHost: max(64, conc)})
	r.store = store
	r.rem = remote.NewFS(r.ctx, remote.NewFetcher(store, opts))
	return r.rem, nil
}

func (r *readerIO) open(path string) (source.File, error) {
	s, err := r.src(path)
	if err != nil {
		return nil, err
	}
	return s.Open(path)
}

func (r *readerIO) size(path string) (int64, error) {
	s, err := r.src(path)
	if err != nil {
		return 0, err
	}
	return s.Stat(path)
}

func (r *readerIO) readAll(path string, max int64) ([]byte, error) {
	s, err := r.src(path)
	if err != nil {
		return nil, err
	}
	return source.ReadFile(s, path, max)
}

// fetchSlot is one object fetched ahead.
type fetchSlot struct {
	done chan struct{}
	data []byte
	err  error
	gen  int64 // the plan (batch) it was fetched for
}

// readAhead starts fetching the remote objects among paths (a batch the reader has
// just planned), io_concurrency requests in flight, in plan order; take hands them to
// the samples' Setup. Local paths are left alone. Objects larger than maxBytes (the
// pipeline's max_file_bytes; 0: no limit) are refused from the size the first
// response gives, before their bytes are read.
func (r *readerIO) readAhead(paths []string, maxBytes int64) {
	var urls []string
	var slots []*fetchSlot
	r.mu.Lock()
	r.newPlan()
	for _, p := range paths {
		if !remote.IsRemote(p) {
			continue
		}
		urls = append(urls, p)
		slots = append(slots, r.addSlot(p))
	}
	r.mu.Unlock()
	if len(urls) == 0 {
		return
	}
	src, err := r.src(urls[0])
	if err != nil {
		for _, sl := range slots {
			sl.err = err
			close(sl.done)
		}
		return
	}
	f := src.(*remote.FS).Fetcher()
	r.goFetch(func() {
		s := f.StreamUpTo(r.ctx, remote.Infos(urls...), maxBytes)
		defer s.Close()
		for i := range slots {
			res, ok := s.Next()
			sl := slots[i]
			if !ok {
				sl.err = fmt.Errorf("remote read of %s was stopped (the pipeline is closing)", urls[i])
				if err := s.Err(); err != nil {
					sl.err = fmt.Errorf("remote read of %s was stopped (the pipeline is closing): %w", urls[i], err)
				}
			} else {
				sl.data, sl.err = res.Data, res.Err
			}
			close(sl.done)
		}
	})
}

// rangeReq is a byte range of a remote file to fetch ahead, under key.
type rangeReq struct {
	key, path string
	off, n    int64
}

// readAheadRanges starts fetching byte ranges of remote files (one sample's span of a
// shard), at most io_concurrency at a time, started in plan order; take(key) hands
// them over.
func (r *readerIO) readAheadRanges(reqs []rangeReq) {
	if len(reqs) == 0 {
		return
	}
	src, srcErr := r.src(reqs[0].path)
	slots := make([]*fetchSlot, len(reqs))
	r.mu.Lock()
	r.newPlan()
	if r.sem == nil {
		conc := r.args.Int("io_concurrency")
		if conc <= 0 {
			conc = remote.DefaultConcurrency
		}
		r.sem = make(chan struct{}, conc)
	}
	for i, q := range reqs {
		slots[i] = r.addSlot(q.key)
	}
	r.mu.Unlock()
	r.goFetch(func() {
		for i, q := range reqs {
			sl := slots[i]
			if srcErr != nil {
				sl.err = srcErr
				close(sl.done)
				continue
			}
			r.sem <- struct{}{}
			r.goFetchChild(func() {
				defer func() { <-r.sem }()
				defer close(sl.done)
				f, err := src.Open(q.path)
				if err != nil {
					sl.err = err
					return
				}
				defer f.Close()
				buf := make([]byte, q.n)
				if m, err := f.ReadAt(buf, q.off); int64(m) < q.n {
					if err == nil || err == io.EOF {
						err = fmt.Errorf("%s is shorter than its index says (%d of %d bytes at offset %d)", q.path, m, q.n, q.off)
					}
					sl.err = err
					return
				}
				sl.data = buf
			})
		}
	})
}

// aheadWindow is how many planned batches a read ahead is kept for. Batches are
// consumed within the pipeline's prefetch depth of being planned; one the executor
// dropped (at a reset) is never taken, and is forgotten after this many more.
const aheadWindow = 64

// addSlot queues a read ahead under key; r.mu is held.
func (r *readerIO) addSlot(key string) *fetchSlot {
	if r.ahead == nil {
		r.ahead = map[string][]*fetchSlot{}
	}
	sl := &fetchSlot{done: make(chan struct{}), gen: r.gen}
	r.ahead[key] = append(r.ahead[key], sl)
	return sl
}

// newPlan starts the reads ahead of a newly planned batch; every aheadWindow batches
// it forgets those of batches that never ran. r.mu is held.
func (r *readerIO) newPlan() {
	r.gen++
	if r.gen%aheadWindow != 0 {
		return
	}
	for k, q := range r.ahead {
		i := 0
		for i < len(q) && q[i].gen < r.gen-aheadWindow {
			i++
		}
		if i == len(q) {
			delete(r.ahead, k)
		} else {
			r.ahead[k] = q[i:]
		}
	}
}

// take returns the object at path (or the range under that key) fetched ahead, or ok
// false when it was not (it is then read directly).
func (r *readerIO) take(path string) (data []byte, ok bool, err error) {
	r.mu.Lock()
	q := r.ahead[path]
	if len(q) == 0 {
		r.mu.Unlock()
		return nil, false, nil
	}
	sl := q[0]
	if len(q) == 1 {
		delete(r.ahead, path)
	} else {
		r.ahead[path] = q[1:]
	}
	r.mu.Unlock()
	<-sl.done
	if sl.err != nil {
		if errors.Is(sl.err, remote.ErrTooLarge) {
			return nil, true, engine.Errorf(engine.StatusData, "%v (the pipeline's max_file_bytes; raise it to read the file)", sl.err)
		}
		var pe *fs.PathError
		if errors.As(sl.err, &pe) {
			return nil, true, sl.err
		}
		return nil, true, &fs.PathError{Op: "read", Path: path, Err: sl.err}
	}
	return sl.data, true, nil
}

// fileCache keeps one worker's open files (archives, record files) by path.
type fileCache struct {
	io    *readerIO
	files map[string]source.File
}

func newFileCache(io *readerIO) *fileCache {
	return &fileCache{io: io, files: map[string]source.File{}}
}

func (c *fileCache) get(path string) (source.File, error) {
	if f, ok := c.files[path]; ok {
		return f, nil
	}
	if len(c.files) >= 64 { // bound open descriptors: drop them all
		c.Close()
	}
	f, err := c.io.open(path)
	if err != nil {
		return nil, err
	}
	c.files[path] = f
	return f, nil
}

func (c *fileCache) readAt(path string, buf []byte, off int64) error {
	f, err := c.get(path)
	if err != nil {
		return sampleError(err)
	}
	return readRange(f, buf, off)
}

// Close closes every open file (engine.Closer, called when the worker ends).
func (c *fileCache) Close() {
	for p, f := range c.files {
		f.Close()
		delete(c.files, p)
	}
}

// joinPath joins a path relative to root (a directory or a URL prefix); absolute
// paths and URLs are kept.
func joinPath(root, p string) string {
	if remote.IsRemote(p) || filepath.IsAbs(p) {
		return p
	}
	if remote.IsRemote(root) {
		return strings.TrimSuffix(root, "/") + "/" + path.Clean("/" + p)[1:]
	}
	return filepath.Join(root, p)
}

// dirOf is the directory of a path or URL.
func dirOf(p string) string {
	if remote.IsRemote(p) {
		return p[:strings.LastIndexByte(p, '/')]
	}
	return filepath.Dir(p)
}

// baseOf is the last element of a path or URL.
func baseOf(p string) string {
	if remote.IsRemote(p) {
		return p[strings.LastIndexByte(p, '/')+1:]
	}
	return filepath.Base(p)
}

// blockReader reads a remote file through 4 MiB blocks, keeping the last one, so that
// a scan of many small headers (a tar, a record file) costs one request per block.
type blockReader struct {
	f    source.File
	off  int64
	data []byte
}

const scanBlock = 4 << 20

func (b *blockReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		o := off + int64(n)
		if o >= b.f.Size() {
			return n, io.EOF
		}
		if b.data == nil || o < b.off || o >= b.off+int64(len(b.data)) {
			start := o / scanBlock * scanBlock
			size := min(scanBlock, b.f.Size()-start)
			buf := make([]byte, size)
			if m, err := b.f.ReadAt(buf, start); int64(m) < size {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return n, err
			}
			b.off, b.data = start, buf
		}
		n += copy(p[n:], b.data[o-b.off:])
	}
	return n, nil
}

// scanner returns a ReaderAt for scanning path's file f: f itself when local.
func scanner(path string, f source.File) io.ReaderAt {
	if remote.IsRemote(path) {
		return &blockReader{f: f}
	}
	return f
}

// shardBuf is a whole remote shard being read into memory.
type shardBuf struct {
	done chan struct{}
	data []byte
	err  error
	used int64 // the plan that last asked for it
}

// maxShardInMemory bounds the shards read whole; larger ones are read per sample.
const maxShardInMemory = 1 << 30

// readAheadShards serves byte ranges of remote shards (one sample's span each, under
// its key for take) from whole shards read into memory front to back with large
// parallel ranged requests (Fetcher.OpenReader), instead of one request per sample.
// soon names shards that later samples will need, fetched now so that they are there
// in time. At most keep shards stay in memory, the least recently planned dropped
// first (a range already handed out keeps its shard's bytes alive until taken; a
// shard dropped and needed again is read again).
func (r *readerIO) readAheadShards(reqs []rangeReq, soon []string, keep int) {
	if len(reqs) == 0 {
		return
	}
	src, srcErr := r.src(reqs[0].path)
	slots := make([]*fetchSlot, len(reqs))
	bufs := make([]*shardBuf, len(reqs))
	r.mu.Lock()
	r.newPlan()
	if r.shards == nil {
		r.shards = map[string]*shardBuf{}
	}
	want := func(path string) *shardBuf {
		b := r.shards[path]
		if b == nil {
			b = &shardBuf{done: make(chan struct{})}
			r.shards[path] = b
			if srcErr != nil {
				b.err = srcErr
				close(b.done)
			} else {
				r.goFetch(func() { r.fetchShard(src.(*remote.FS), path, b) })
			}
		}
		b.used = r.gen
		return b
	}
	for i, q := range reqs {
		slots[i] = r.addSlot(q.key)
		bufs[i] = want(q.path)
	}
	for _, p := range soon {
		want(p)
	}
	for len(r.shards) > max(keep, 1) {
		var oldest string
		for p, b := range r.shards {
			if b.used < r.gen && (oldest == "" || b.used < r.shards[oldest].used) {
				oldest = p
			}
		}
		if oldest == "" {
			break // every shard is needed by this plan
		}
		delete(r.shards, oldest)
	}
	r.mu.Unlock()
	r.goFetch(func() {
		for i, q := range reqs {
			sl, b := slots[i], bufs[i]
			select {
			case <-b.done:
			case <-r.ctx.Done():
			}
			switch {
			case r.ctx.Err() != nil:
				sl.err = fmt.Errorf("remote read of %s was stopped", q.path)
			case b.err != nil:
				sl.err = b.err
			case q.off+q.n > int64(len(b.data)):
				sl.err = fmt.Errorf("%s is shorter than its index says (%d bytes, sample at offset %d+%d)", q.path, len(b.data), q.off, q.n)
			default:
				sl.data = b.data[q.off : q.off+q.n : q.off+q.n]
			}
			close(sl.done)
		}
	})
}

// fetchShard reads the whole object at path into b.
func (r *readerIO) fetchShard(fs *remote.FS, path string, b *shardBuf) {
	defer close(b.done)
	sr, err := fs.Fetcher().OpenReader(r.ctx, path)
	if err != nil {
		b.err = err
		return
	}
	defer sr.Close()
	size := sr.Info().Size
	if size > maxShardInMemory {
		b.err = fmt.Errorf("%s: %d bytes is too large to read whole", path, size)
		return
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(sr, data); err != nil {
		b.err = err
		return
	}
	b.data = data
}

// listScope says where the entries of a list of files (a file_list, COCO's
// annotations) may point, unless allow_outside_root is set: under root, the file_root
// or else the list's directory. For a local root, an entry must lie below it once
// joined and cleaned (no absolute path elsewhere, no '..' above it, no URL); for a
// remote root, it must have its scheme and host (S3: bucket). An entry of a list
// fetched from a URL must moreover be remote: such a list never reaches local files.
// Symbolic links below a local root are not followed by the check.
type listScope struct {
	arg   string // the reader argument naming the list, for messages
	list  string
	root  string
	allow bool
}

func newListScope(a *engine.Args, arg, list, root string) listScope {
	if root == "" {
		root = dirOf(list)
	}
	allow := false
	if _, ok := a.Schema.Arg(AllowOutsideRootArg.Name); ok {
		allow = a.Bool(AllowOutsideRootArg.Name)
	}
	return listScope{arg: arg, list: list, root: root, allow: allow}
}

// check returns an error naming the entry (as written in the list) when resolved, the
// path it resolves to, lies outside the scope.
func (s listScope) check(entry, resolved string) error {
	if s.allow {
		return nil
	}
	why := ""
	switch {
	case remote.IsRemote(s.list) && !remote.IsRemote(resolved):
		why = "a list read from a URL may not name local files"
	case remote.IsRemote(s.root):
		if !remote.IsRemote(resolved) {
			why = fmt.Sprintf("it is a local path and the root %s is remote", s.root)
		} else if o, ro := origin(resolved), origin(s.root); o == "" || o != ro {
			why = fmt.Sprintf("it is not on %s, the root's location", ro)
		}
	case remote.IsRemote(resolved):
		why = fmt.Sprintf("it is a URL and the root %s is a local directory", s.root)
	default:
		if !underDir(s.root, resolved) {
			why = fmt.Sprintf("it is outside the root directory %s", s.root)
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%s %s: entry %q is refused: %s (set allow_outside_root=True to read files outside the data set)", s.arg, s.list, entry, why)
}

// origin is a URL's lower-case scheme and host (the bucket for s3:// and gs://, the
// container for az://), without user information; "" when it does not parse.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	return strings.ToLower(p.Scheme) + "://" + strings.ToLower(p.Host)
}

// underDir reports whether the local path p lies in dir or below it, lexically.
func underDir(dir, p string) bool {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(ad, ap)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
