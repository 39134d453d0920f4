package engine

import (
	"io"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godali/godali/source"
)

// ImageProber is a decoder that reads what an encoded image will take from its header,
// without decoding it: the stored size, the most bytes its output can have (the whole
// image in the decoder's output type) and the decoder's own whole-image work memory.
type ImageProber interface {
	ProbeImage(head []byte) (ImageHeader, error)
}

// ImageHeader is what ImageProber reads.
type ImageHeader struct {
	Width, Height int
	OutBytes      int64 // the decoded image, whole, in the decoder's output type
	WorkBytes     int64 // the decoder's intermediate besides the output (0: row by row)
}

// LocalFiles is a reader whose samples are local files: their paths, all of them.
type LocalFiles interface {
	LocalFiles() []string
}

// ImageScan is what the header scan found for one decoder (docs/pipeline.md,
// "Preallocation from the data").
type ImageScan struct {
	Decoder string `json:"decoder"`
	Reader  string `json:"reader"`
	Files   int    `json:"files"`   // the reader's
	Scanned int    `json:"scanned"` // headers read
	Failed  int    `json:"failed"`  // unreadable or not an image the decoder knows
	// Sampled: a sample of the files was read (a large data set); the maxima are then
	// the sample's, an estimate of the data set's.
	Sampled      bool    `json:"sampled"`
	MaxWidth     int     `json:"max_width"`
	MaxHeight    int     `json:"max_height"`
	MaxOutBytes  int64   `json:"max_output_bytes"`
	MeanOutBytes int64   `json:"mean_output_bytes"`
	MaxWorkBytes int64   `json:"max_work_bytes"`
	MaxFileBytes int64   `json:"max_file_bytes"` // the largest encoded file
	Seconds      float64 `json:"seconds"`
	Done         bool    `json:"done"`
	// sizes are the outputs' bytes of the images read, largest first: the most a
	// batch's distinct samples can take together (memory plan).
	sizes []int64
}

// largest is the sum of the n largest outputs (the largest repeated when fewer were
// scanned), each as the host pool holds it (its size class).
func (s ImageScan) largest(n int) int64 {
	var sum int64
	for i := 0; i < n; i++ {
		v := s.MaxOutBytes
		if i < len(s.sizes) {
			v = s.sizes[i]
		}
		sum += int64(max(classSize(int(v)), 0))
	}
	return sum
}

// Scan limits: every file of a data set up to scanAll, else a random sample of
// scanSample; a header is looked for in the first scanHead bytes, then scanHeadMax.
const (
	scanAll     = 4096
	scanSample  = 2048
	scanHead    = 16 << 10
	scanHeadMax = 1 << 20
)

// scanTarget is a decoder whose input is a reader of local files.
type scanTarget struct {
	node   *Node
	reader *Node
	prober ImageProber
	files  LocalFiles
}

// scanTargets finds the decoders the header scan can serve.
func scanTargets(g *Graph) []scanTarget {
	var ts []scanTarget
	for _, n := range g.Nodes {
		pr, ok := n.Op.(ImageProber)
		if !ok || len(n.In) == 0 || n.In[0].Producer == nil {
			continue
		}
		r := n.In[0].Producer
		lf, ok := r.Op.(LocalFiles)
		if !ok {
			continue
		}
		ts = append(ts, scanTarget{node: n, reader: r, prober: pr, files: lf})
	}
	return ts
}

// imageScans runs the header scans in the background and holds their results.
type imageScans struct {
	mu    sync.Mutex
	scans []ImageScan
	done  chan struct{}
	stop  atomic.Bool
	// hint is, by node ID, the largest first output the node's samples need (the
	// decoder's decoded image, the reader's encoded file): a worker's buffer for it is
	// made that large the first time.
	hint []atomic.Int64
}

// startScans starts the scan of every decoder fed by a local-file reader (after the
// readers are open). The results come in as each decoder's scan ends.
func (p *Pipeline) startScans() {
	ts := scanTargets(p.Graph)
	s := &imageScans{done: make(chan struct{}), hint: make([]atomic.Int64, len(p.Graph.Nodes))}
	p.scans = s
	if len(ts) == 0 {
		close(s.done)
		return
	}
	for _, t := range ts {
		s.scans = append(s.scans, ImageScan{Decoder: t.node.Name, Reader: t.reader.Name})
	}
	maxFile := p.limits.MaxFileBytes
	go func() {
		defer close(s.done)
		for i, t := range ts {
			res := scanImages(t.files.LocalFiles(), t.prober, maxFile, &s.stop)
			res.Decoder, res.Reader = t.node.Name, t.reader.Name
			if res.MaxOutBytes > 0 {
				s.hint[t.node.ID].Store(res.MaxOutBytes)
			}
			// The reader's encoded bytes too (its first output): the largest file.
			if res.MaxFileBytes > s.hint[t.reader.ID].Load() {
				s.hint[t.reader.ID].Store(res.MaxFileBytes)
			}
			s.mu.Lock()
			s.scans[i] = res
			s.mu.Unlock()
		}
	}()
}

// results returns the scans, waiting for them at most wait.
func (s *imageScans) results(wait time.Duration) []ImageScan {
	if s == nil {
		return nil
	}
	if wait > 0 {
		select {
		case <-s.done:
		case <-time.After(wait):
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ImageScan(nil), s.scans...)
}

// hintFor is the preallocation of output k of node id: the largest the scan found, 0
// when none (yet) or for outputs after the first.
func (s *imageScans) hintFor(id, k int) int64 {
	if s == nil || k != 0 || id >= len(s.hint) {
		return 0
	}
	return s.hint[id].Load()
}

// close stops a scan in progress and waits for it.
func (s *imageScans) close() {
	if s == nil {
		return
	}
	s.stop.Store(true)
	<-s.done
}

// ImageScans returns the header scans' results, waiting for them at most wait (0: as
// they are now).
func (p *Pipeline) ImageScans(wait time.Duration) []ImageScan {
	return p.scans.results(wait)
}

// scanImages reads the headers of paths (all, or a sample of a large list).
func scanImages(paths []string, pr ImageProber, maxFile int64, stop *atomic.Bool) ImageScan {
	start := time.Now()
	res := ImageScan{Files: len(paths)}
	pick := paths
	if len(paths) > scanAll {
		res.Sampled = true
		rng := rand.New(rand.NewSource(int64(len(paths))))
		pick = make([]string, scanSample)
		for i, j := range rng.Perm(len(paths))[:scanSample] {
			pick[i] = paths[j]
		}
	}
	var sum int64
	buf := make([]byte, scanHead)
	for _, path := range pick {
		if stop.Load() {
			break
		}
		h, size, err := probeFile(path, pr, buf, maxFile)
		res.Scanned++
		res.MaxFileBytes = max(res.MaxFileBytes, size)
		if err != nil {
			res.Failed++
			continue
		}
		res.MaxWidth = max(res.MaxWidth, h.Width)
		res.MaxHeight = max(res.MaxHeight, h.Height)
		res.MaxOutBytes = max(res.MaxOutBytes, h.OutBytes)
		res.MaxWorkBytes = max(res.MaxWorkBytes, h.WorkBytes)
		res.sizes = append(res.sizes, h.OutBytes)
		sum += h.OutBytes
	}
	if ok := res.Scanned - res.Failed; ok > 0 {
		res.MeanOutBytes = sum / int64(ok)
	}
	sort.Slice(res.sizes, func(i, j int) bool { return res.sizes[i] > res.sizes[j] })
	res.Seconds = time.Since(start).Seconds()
	res.Done = true
	return res
}

// probeFile reads a file's first bytes and probes them; a header further in (a JPEG
// with a large EXIF block before its frame header) is looked for in up to scanHeadMax.
// The file is opened as the readers open it (source.Local): a FIFO or device named
// like an image is an error, not a hang.
func probeFile(path string, pr ImageProber, buf []byte, maxFile int64) (ImageHeader, int64, error) {
	f, err := source.Local{}.Open(path)
	if err != nil {
		return ImageHeader{}, 0, err
	}
	defer f.Close()
	size := f.Size()
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return ImageHeader{}, size, err
	}
	h, perr := pr.ProbeImage(buf[:n])
	if perr == nil || n < len(buf) {
		return h, size, perr
	}
	limit := min(int64(scanHeadMax), size)
	if maxFile > 0 {
		limit = min(limit, maxFile)
	}
	more := make([]byte, limit)
	m, err := f.ReadAt(more, 0)
	if err != nil && err != io.EOF {
		return ImageHeader{}, size, err
	}
	h, err = pr.ProbeImage(more[:m])
	return h, size, err
}
