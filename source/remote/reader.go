package remote

import (
	"context"
	"fmt"
	"io"
)

// ShardReader reads one large object (a tar or record shard) front to back while
// ChunkSize ranged requests run ahead in parallel; memory stays at about
// 2 x Concurrency chunks (at most 512 MiB) whatever the object's size. Requests ask
// for the ETag seen at open (If-Match), so a shard replaced mid-read fails with
// ErrChanged instead of mixing two versions.
type ShardReader struct {
	info   ObjectInfo
	stream *Stream
	cached *cached
	src    io.Reader // the cached copy, when served from the cache
	cur    []byte
	cw     *cacheWriter
	read   int64
	err    error
}

// OpenReader opens url for sequential reading (one HEAD request, or none beyond the
// cache check when the cache holds the current version).
func (f *Fetcher) OpenReader(ctx context.Context, url string) (*ShardReader, error) {
	var info ObjectInfo
	err := f.retry(ctx, url, func(actx context.Context) error {
		o, err := f.store.Open(actx, url)
		if err == nil {
			info = o.Info()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	r := &ShardReader{info: info}
	cache := f.opts.Cache
	if cache != nil && IsRemote(url) {
		if hit := cache.lookup(url); hit != nil {
			if info.ETag != "" && hit.etag == info.ETag && hit.size == info.Size {
				// A shard is handed out as it is read: check it whole first (one
				// sequential read of a local file, usually from the page cache).
				if hit.verify() {
					f.cacheHits.Add(1)
					r.cached, r.src = hit, hit.reader()
					return r, nil
				}
				cache.discard(hit)
			}
			hit.Close()
		}
		r.cw = cache.create(url, info.ETag, info.Size)
	}
	chunk := f.opts.ChunkSize
	var pieces []piece
	for off := int64(0); off < info.Size; off += chunk {
		pieces = append(pieces, piece{info: info, off: off, n: min(chunk, info.Size-off)})
	}
	ahead := max(2, min(2*f.opts.Concurrency, int((512<<20)/chunk)))
	r.stream = f.stream(ctx, pieces, ahead, f.opts.MaxObjectSize)
	return r, nil
}

// Info returns the object's URL, size and ETag.
func (r *ShardReader) Info() ObjectInfo { return r.info }

func (r *ShardReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.src != nil {
		n, err := r.src.Read(p)
		if err != nil && err != io.EOF {
			err = &Error{Op: "get", URL: r.info.URL, Err: fmt.Errorf("reading the cached copy: %w", err)}
		}
		return n, err
	}
	for len(r.cur) == 0 {
		res, ok := r.stream.Next()
		if !ok {
			if err := r.stream.Err(); err != nil {
				r.err = err
				return 0, err
			}
			if r.read != r.info.Size {
				r.err = &Error{Op: "get", URL: r.info.URL, Err: fmt.Errorf("read %d of %d bytes", r.read, r.info.Size)}
				return 0, r.err
			}
			if r.cw != nil {
				r.cw.commit()
				r.cw = nil
			}
			r.err = io.EOF
			return 0, io.EOF
		}
		if res.Err != nil {
			r.err = res.Err
			return 0, res.Err
		}
		r.cur = res.Data
	}
	n := copy(p, r.cur)
	if r.cw != nil {
		r.cw.Write(r.cur[:n])
	}
	r.cur = r.cur[n:]
	r.read += int64(n)
	return n, nil
}

// Close stops the requests in flight and drops an unfinished cache entry.
func (r *ShardReader) Close() error {
	if r.stream != nil {
		r.stream.Close()
	}
	if r.cw != nil {
		r.cw.abort()
		r.cw = nil
	}
	if r.cached != nil {
		r.cached.Close()
	}
	return nil
}
