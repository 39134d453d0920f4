package remote

import (
	"bufio"
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/godali/godali/source"
)

// Cache keeps whole objects on local disk, keyed by URL and checked against the
// object's ETag, evicting the least recently used entries past a size bound.
//
// Each entry is one file: a JSON header line {url, etag, size, crc32c} then the bytes.
// The header's URL is redacted (source.Redact: no password, signature or token is
// written to disk; the file name is a hash of the full URL). A file is written under
// a temporary name, fsynced and renamed into place, so a crash leaves either the old
// entry, the new one, or a temporary file that OpenCache deletes; a file whose length
// disagrees with its header is never served, and one whose bytes fail the CRC-32C
// checksum of its header (damaged at rest) is dropped when read and the object
// fetched again. The size
// bound and LRU order are kept per process: processes may share a directory (entries
// are replaced atomically) but each evicts by its own accounting.
type Cache struct {
	dir      string
	maxBytes int64

	mu    sync.Mutex
	lru   *list.List // front: most recent; values *cacheEntry
	byKey map[string]*list.Element
	total int64
}

type cacheEntry struct {
	name string // file name in dir
	size int64  // file size on disk
}

type cacheHeader struct {
	URL  string `json:"url"` // redacted
	ETag string `json:"etag"`
	Size int64  `json:"size"`
	// CRC32C is the Castagnoli CRC-32 of the bytes, 8 hex digits (last, so that the
	// writer can fill it in place once the bytes are written).
	CRC32C string `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcPlaceholder is what the header holds until the entry's bytes are all written.
const crcPlaceholder = "00000000"

const cacheSuffix = ".obj"

// OpenCache opens (creating) a cache directory bounded to maxBytes on disk (<= 0: no
// bound). Leftover temporary files of interrupted writes are removed; existing entries
// are adopted, the most recently modified counting as the most recently used.
func OpenCache(dir string, maxBytes int64) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache_dir %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cache_dir %s: %w", dir, err)
	}
	c := &Cache{dir: dir, maxBytes: maxBytes, lru: list.New(), byKey: map[string]*list.Element{}}
	type found struct {
		name  string
		size  int64
		mtime int64
	}
	var have []found
	for _, e := range ents {
		name := e.Name()
		if strings.Contains(name, ".tmp") {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		if !strings.HasSuffix(name, cacheSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		have = append(have, found{name, info.Size(), info.ModTime().UnixNano()})
	}
	sort.Slice(have, func(i, j int) bool { return have[i].mtime > have[j].mtime })
	c.mu.Lock()
	for _, f := range have {
		c.byKey[f.name] = c.lru.PushBack(&cacheEntry{name: f.name, size: f.size})
		c.total += f.size
	}
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

func cacheName(url string) string {
	h := sha256.Sum256([]byte(url))
	return hex.EncodeToString(h[:20]) + cacheSuffix
}

// cached is an open cache entry.
type cached struct {
	f    *os.File
	name string // file name in the cache directory
	etag string
	size int64
	off  int64  // where the object's bytes start in f
	crc  uint32 // of the bytes, from the header
}

// matches reports whether data (the entry's bytes as read) has the header's checksum.
func (c *cached) matches(data []byte) bool {
	return crc32.Checksum(data, castagnoli) == c.crc
}

// verify reads the entry's bytes once and checks them against the header's checksum.
func (c *cached) verify() bool {
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, c.reader())
	return err == nil && n == c.size && h.Sum32() == c.crc
}

func (c *cached) Close() error { return c.f.Close() }

// reader returns a reader over the object's bytes.
func (c *cached) reader() io.Reader { return io.NewSectionReader(c.f, c.off, c.size) }

// lookup opens the entry for url, or returns nil when there is none (or it is damaged,
// in which case it is dropped).
func (c *Cache) lookup(url string) *cached {
	name := cacheName(url)
	c.mu.Lock()
	el, ok := c.byKey[name]
	if ok {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return nil
	}
	path := filepath.Join(c.dir, name)
	f, err := os.Open(path)
	if err != nil {
		c.drop(name)
		return nil
	}
	br := bufio.NewReaderSize(f, 4096)
	line, err := br.ReadSlice('\n')
	var h cacheHeader
	var sum uint64
	if err == nil && json.Unmarshal(line, &h) == nil && h.URL == source.Redact(url) && len(h.CRC32C) == 8 {
		sum, err = strconv.ParseUint(h.CRC32C, 16, 32)
	} else {
		err = errBadEntry
	}
	if err != nil { // damaged, of an older format (no checksum), or another URL's
		f.Close()
		c.remove(name)
		return nil
	}
	st, err := f.Stat()
	off := int64(len(line))
	if err != nil || st.Size() != off+h.Size {
		f.Close()
		c.remove(name)
		return nil
	}
	return &cached{f: f, name: name, etag: h.ETag, size: h.Size, off: off, crc: uint32(sum)}
}

var errBadEntry = errors.New("bad cache entry")

// discard removes hit's entry (it failed its checksum); the caller closes hit.
func (c *Cache) discard(hit *cached) {
	c.remove(hit.name)
}

func (c *Cache) drop(name string) {
	c.mu.Lock()
	if el, ok := c.byKey[name]; ok {
		c.total -= el.Value.(*cacheEntry).size
		c.lru.Remove(el)
		delete(c.byKey, name)
	}
	c.mu.Unlock()
}

func (c *Cache) remove(name string) {
	c.drop(name)
	os.Remove(filepath.Join(c.dir, name))
}

// Len returns the number of entries and their total size on disk.
func (c *Cache) Len() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.total
}

// cacheWriter writes one entry; commit makes it visible, abort throws it away.
type cacheWriter struct {
	c       *Cache
	url     string // unredacted: it names the file
	f       *os.File
	w       *bufio.Writer
	hdr     cacheHeader
	written int64
	hdrLen  int64
	crcAt   int64 // offset of the checksum's digits in the header
	crc     uint32
	failed  error
}

// create starts an entry for url of the given size and ETag. It returns nil when the
// object cannot be cached (larger than the whole bound, or the directory fails).
func (c *Cache) create(url, etag string, size int64) *cacheWriter {
	if size < 0 || etag == "" || (c.maxBytes > 0 && size > c.maxBytes) {
		return nil
	}
	f, err := os.CreateTemp(c.dir, cacheName(url)+".tmp*")
	if err != nil {
		return nil
	}
	h := cacheHeader{URL: source.Redact(url), ETag: etag, Size: size, CRC32C: crcPlaceholder}
	line, _ := json.Marshal(h)
	at := bytes.LastIndex(line, []byte(`"crc32c":"`+crcPlaceholder+`"`))
	line = append(line, '\n')
	w := bufio.NewWriterSize(f, 256<<10)
	cw := &cacheWriter{c: c, url: url, f: f, w: w, hdr: h, hdrLen: int64(len(line)), crcAt: int64(at + len(`"crc32c":"`))}
	if _, err := w.Write(line); err != nil {
		cw.abort()
		return nil
	}
	return cw
}

func (w *cacheWriter) Write(p []byte) (int, error) {
	if w.failed != nil {
		return len(p), nil // caching is best effort: never fail the read
	}
	n, err := w.w.Write(p)
	w.written += int64(n)
	w.crc = crc32.Update(w.crc, castagnoli, p[:n])
	if err != nil {
		w.failed = err
	}
	return len(p), nil
}

func (w *cacheWriter) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// commit syncs and renames the entry into place when all of it was written.
func (w *cacheWriter) commit() {
	if w.failed != nil || w.written != w.hdr.Size {
		w.abort()
		return
	}
	if err := w.w.Flush(); err != nil {
		w.abort()
		return
	}
	if _, err := w.f.WriteAt([]byte(fmt.Sprintf("%08x", w.crc)), w.crcAt); err != nil {
		w.abort()
		return
	}
	if err := w.f.Sync(); err != nil {
		w.abort()
		return
	}
	if err := w.f.Close(); err != nil {
		os.Remove(w.f.Name())
		return
	}
	c := w.c
	name := cacheName(w.url)
	if err := os.Rename(w.f.Name(), filepath.Join(c.dir, name)); err != nil {
		os.Remove(w.f.Name())
		return
	}
	size := w.hdrLen + w.hdr.Size
	c.mu.Lock()
	if el, ok := c.byKey[name]; ok {
		c.total -= el.Value.(*cacheEntry).size
		c.lru.Remove(el)
	}
	c.byKey[name] = c.lru.PushFront(&cacheEntry{name: name, size: size})
	c.total += size
	c.evictLocked()
	c.mu.Unlock()
}

func (c *Cache) evictLocked() {
	for c.maxBytes > 0 && c.total > c.maxBytes && c.lru.Len() > 0 {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.byKey, e.name)
		c.total -= e.size
		os.Remove(filepath.Join(c.dir, e.name))
	}
}

// put stores a whole object.
func (c *Cache) put(url, etag string, data []byte) {
	if w := c.create(url, etag, int64(len(data))); w != nil {
		w.Write(data)
		w.commit()
	}
}
