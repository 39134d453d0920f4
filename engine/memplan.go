package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// MemoryPlan is the pipeline's host memory, estimated before it is spent
// (docs/pipeline.md, "Memory plan"): the output buffers of the batches in flight, the
// workers' intermediate buffers and the decoders' work memory, worst case (the largest
// image the header scan found, the most threads and prefetch "auto" may reach) and
// expected (the scan's mean image). The Go runtime and its heap's overhead, operators'
// own scratch, the library's code and the caller's own memory are not in it.
type MemoryPlan struct {
	BatchSize          int `json:"batch_size"`
	NumThreads         int `json:"num_threads"`          // the most workers counted
	PrefetchQueueDepth int `json:"prefetch_queue_depth"` // the most batches in flight counted
	// Batches is the output buffers' count: prefetch_queue_depth batches in flight, the
	// consumer's current one and its previous one, which a consumer that replaces its
	// batch (Python's `out = pipe.run()`) still holds while the call that hands out the
	// next batch frees a credit for another (consumerBatches).
	Batches int `json:"batches"`
	// SubBatchSize is the pipeline's sub_batch_size (0: the whole batch).
	SubBatchSize int `json:"sub_batch_size"`
	// Outputs are the pipeline's outputs, per batch; Intermediates the other values,
	// per worker (each holds one sample's); Crossing the values a host-batch node
	// (python_function) reads or makes, which a batch holds for its samples while it is
	// prepared: every sample of prefetch_queue_depth batches, or with sub_batch_size one
	// part of each.
	Outputs       []PlanValue `json:"outputs"`
	Intermediates []PlanValue `json:"intermediates"`
	Crossing      []PlanValue `json:"crossing,omitempty"`
	// Host totals: per prefetch slot (one batch's outputs), the outputs of all Batches,
	// the workers' intermediates, the decoders' work memory, and the sum.
	SlotBytes         int64 `json:"slot_bytes"`
	OutputBytes       int64 `json:"output_bytes"`
	IntermediateBytes int64 `json:"intermediate_bytes"`
	CrossingBytes     int64 `json:"crossing_bytes"`
	DecoderWorkBytes  int64 `json:"decoder_work_bytes"`
	// RuntimeBytes is the library's own memory while it runs, measured rather than
	// derived (runtimeBase + runtimePerThread x num_threads): the Go runtime and the
	// heap's metadata, the workers' threads and stacks, the C allocator's per-thread
	// arenas (libjpeg's small allocations), the batches' wrappers in the caller.
	RuntimeBytes      int64 `json:"runtime_bytes"`
	HostBytesWorst    int64 `json:"host_bytes_worst"`
	HostBytesExpected int64 `json:"host_bytes_expected"`
	// MaxHostBytes is the description's budget (0: none); Available the process's
	// (cgroup limit, MemAvailable).
	MaxHostBytes int64        `json:"max_host_bytes"`
	Available    MemoryBudget `json:"available"`
	Scans        []ImageScan  `json:"scans"`
	// Unknown names the values whose size nothing bounds (counted as 0).
	Unknown []string `json:"unknown,omitempty"`
	Warning string   `json:"warning,omitempty"`
}

// PlanValue is one value's bytes: a sample's (worst, expected) and in total.
type PlanValue struct {
	Name           string `json:"name"`
	Node           string `json:"node"`
	SampleWorst    int64  `json:"sample_bytes_worst"`
	SampleExpected int64  `json:"sample_bytes_expected"`
	Bytes          int64  `json:"bytes_worst"` // all of it: x batch x Batches, or x threads
	// Source: "shape" (static), "scan" (a decoder's, from the header scan), "input"
	// (a dynamic value bounded by its inputs'), "file" (a reader's encoded files), or
	// "unknown".
	Source string `json:"source"`
}

// planBounds are a value's per-sample bytes, worst and expected.
type planBounds struct {
	worst, expected int64
	source          string
}

// valueBounds bounds every value of the graph per sample: static shapes exactly,
// decoder outputs from the scan, readers' files from the scan's file sizes, and other
// dynamic values by their largest input (scaled by the dtype): an operator that makes
// its output larger than its input (an upscaling resize) is under-counted.
func valueBounds(g *Graph, scans []ImageScan) map[*DataNode]planBounds {
	byDecoder := map[string]ImageScan{}
	byReader := map[string]ImageScan{}
	for _, s := range scans {
		if s.Done {
			byDecoder[s.Decoder] = s
			if r, ok := byReader[s.Reader]; !ok || s.MaxFileBytes > r.MaxFileBytes {
				byReader[s.Reader] = s
			}
		}
	}
	b := map[*DataNode]planBounds{}
	for _, n := range g.Nodes {
		for k, d := range n.Out {
			if d.Meta.Static() {
				size, ok := mulSize(d.Meta.DType.Size(), d.Meta.Shape...)
				if ok {
					b[d] = planBounds{int64(size), int64(size), "shape"}
					continue
				}
			}
			if s, ok := byDecoder[n.Name]; ok && k == 0 {
				b[d] = planBounds{s.MaxOutBytes, s.MeanOutBytes, "scan"}
				continue
			}
			if s, ok := byReader[n.Name]; ok && k == 0 {
				b[d] = planBounds{s.MaxFileBytes, s.MaxFileBytes, "file"}
				continue
			}
			var pb planBounds
			for _, in := range n.In {
				ib, ok := b[in]
				if !ok || ib.source == "unknown" {
					continue
				}
				scale := func(v int64) int64 {
					if s := in.Meta.DType.Size(); s > 0 && d.Meta.DType.Size() > 0 {
						return v * int64(d.Meta.DType.Size()) / int64(s)
					}
					return v
				}
				pb.worst = max(pb.worst, scale(ib.worst))
				pb.expected = max(pb.expected, scale(ib.expected))
				pb.source = "input"
			}
			if pb.source == "" {
				pb.source = "unknown"
			}
			b[d] = pb
		}
	}
	return b
}

// MemoryPlan estimates the pipeline's host memory from what is known now; wait bounds
// how long it waits for the header scans (0: as they are).
func (p *Pipeline) MemoryPlan(wait time.Duration) MemoryPlan {
	scans := p.scans.results(wait)
	tn := p.Tuning()
	threads, depth := max(tn.NumThreads, tn.MaxThreads), max(tn.PrefetchQueueDepth, tn.MaxPrefetch)
	if tn.State == "adjusted" || tn.State == "kept" {
		// "auto" has decided, once for the pipeline's life: its values, not the maxima.
		threads, depth = tn.NumThreads, tn.PrefetchQueueDepth
	}
	mp := MemoryPlan{BatchSize: p.Spec.BatchSize, NumThreads: threads, PrefetchQueueDepth: depth,
		MaxHostBytes: p.Spec.MaxHostBytes, Available: ReadMemoryBudget(), Scans: scans}
	mp.Batches = mp.PrefetchQueueDepth + consumerBatches
	// Crossing data: held by each batch being prepared until its last phase has run
	// (finish), or by one part of it while the part runs (runParts).
	crossSamples := int64(p.Spec.BatchSize * mp.PrefetchQueueDepth)
	if p.parts {
		mp.SubBatchSize = p.Spec.SubBatchSize
		crossSamples = int64(p.Spec.SubBatchSize * mp.PrefetchQueueDepth)
	}
	bounds := valueBounds(p.Graph, scans)
	bs := int64(p.Spec.BatchSize)
	for _, n := range p.Graph.Nodes {
		if n.Device == "gpu" {
			continue
		}
		for _, d := range n.Out {
			pb := bounds[d]
			v := PlanValue{Name: d.Name, Node: n.Name, SampleWorst: pb.worst, SampleExpected: pb.expected, Source: pb.source}
			if pb.source == "unknown" {
				mp.Unknown = append(mp.Unknown, d.Name)
			}
			if d.Output >= 0 {
				if p.Part.OnGPU(d) {
					continue
				}
				// One buffer per batch, in the host pool's size classes.
				batch := pb.worst * bs
				if c := classSize(int(batch)); c > 0 && d.Meta.Static() {
					batch = int64(c)
				}
				v.Bytes = batch * int64(mp.Batches)
				if s, ok := scanOf(scans, n.Name); ok && pb.source == "scan" {
					// A buffer per sample; the batches in flight hold distinct samples:
					// at most the largest bs x Batches images of the data set.
					v.Bytes = s.largest(p.Spec.BatchSize * mp.Batches)
					batch = s.largest(p.Spec.BatchSize)
				}
				mp.Outputs = append(mp.Outputs, v)
				mp.SlotBytes += batch
				mp.OutputBytes += v.Bytes
				mp.HostBytesExpected += pb.expected * bs * int64(mp.Batches)
				continue
			}
			if _, ok := p.Part.cross[d]; ok {
				v.Bytes = int64(max(classSize(int(pb.worst)), int(pb.worst))) * crossSamples
				mp.Crossing = append(mp.Crossing, v)
				mp.CrossingBytes += v.Bytes
				mp.HostBytesExpected += pb.expected * crossSamples
				continue
			}
			// A worker's buffer grows to a quarter above the largest sample it saw,
			// or to the scan's largest at once (preallocation).
			per := pb.worst + pb.worst/4
			if pb.source == "scan" || pb.source == "file" {
				per = pb.worst
			}
			v.Bytes = per * int64(mp.NumThreads)
			mp.Intermediates = append(mp.Intermediates, v)
			mp.IntermediateBytes += v.Bytes
			mp.HostBytesExpected += pb.expected * int64(mp.NumThreads)
		}
	}
	for _, s := range scans {
		mp.DecoderWorkBytes += s.MaxWorkBytes * int64(mp.NumThreads)
	}
	mp.RuntimeBytes = runtimeBase + runtimePerThread*int64(mp.NumThreads)
	mp.HostBytesWorst = mp.OutputBytes + mp.IntermediateBytes + mp.CrossingBytes + mp.DecoderWorkBytes + mp.RuntimeBytes
	mp.HostBytesExpected += mp.DecoderWorkBytes + mp.RuntimeBytes
	if avail := mp.Available.Available(); avail > 0 && mp.HostBytesWorst > avail {
		mp.Warning = fmt.Sprintf("the pipeline may need %s of host memory, more than the %s available: %s",
			fmtBytes(mp.HostBytesWorst), fmtBytes(avail), mp.lower())
	}
	return mp
}

// consumerBatches are the batches the consumer may hold beside those in flight: Next
// returns the credit of the batch it hands out, so the producer starts another while
// the consumer still holds the batch it took before (measured: val 1x2 on the bench's
// data, 106.9 MiB peak growth when each batch is dropped before the next call, 125.2
// MiB when it is kept until the call returns, one batch of outputs more).
const consumerBatches = 2

// The library's own memory at run time (MemoryPlan.RuntimeBytes), measured as the peak
// RSS growth the buffers do not explain: 1.7-2.3 MiB for a pipeline without buffers
// (random.uniform of one float, 1 to 4 threads), and up to 4.4 MiB more than the buffers
// for the bench's training and validation pipelines over ten epochs (1 to 4 threads;
// benchmarks/RESULTS.md).
const (
	runtimeBase      = 4 << 20
	runtimePerThread = 1 << 20
)

// scanOf is the scan of decoder node.
func scanOf(scans []ImageScan, node string) (ImageScan, bool) {
	for _, s := range scans {
		if s.Decoder == node && s.Done {
			return s, true
		}
	}
	return ImageScan{}, false
}

// lower names what to lower, the largest part first.
func (mp MemoryPlan) lower() string {
	parts := []struct {
		bytes int64
		what  string
	}{
		{mp.OutputBytes, fmt.Sprintf("output buffers %s (batch_size %d x prefetch_queue_depth+2 = %d batches: lower batch_size or prefetch_queue_depth)",
			fmtBytes(mp.OutputBytes), mp.BatchSize, mp.Batches)},
		{mp.IntermediateBytes + mp.DecoderWorkBytes, fmt.Sprintf("workers' buffers %s (%d threads: lower num_threads, or max_image_pixels to refuse the largest images)",
			fmtBytes(mp.IntermediateBytes+mp.DecoderWorkBytes), mp.NumThreads)},
	}
	if mp.CrossingBytes > 0 {
		what := fmt.Sprintf("host-batch nodes' data %s (held for every sample of each batch: set sub_batch_size)", fmtBytes(mp.CrossingBytes))
		if mp.SubBatchSize > 0 {
			what = fmt.Sprintf("host-batch nodes' data %s (sub_batch_size %d x prefetch_queue_depth %d samples: lower sub_batch_size)", fmtBytes(mp.CrossingBytes), mp.SubBatchSize, mp.PrefetchQueueDepth)
		}
		parts = append(parts, struct {
			bytes int64
			what  string
		}{mp.CrossingBytes, what})
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].bytes > parts[j].bytes })
	whats := make([]string, len(parts))
	for i, pt := range parts {
		whats[i] = pt.what
	}
	return strings.Join(whats, "; ")
}

// Summary is the plan in one line (errors and logs).
func (mp MemoryPlan) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "host memory plan: %s worst (%s expected) = outputs %s + workers' buffers %s + decoders' work %s + runtime %s",
		fmtBytes(mp.HostBytesWorst), fmtBytes(mp.HostBytesExpected), fmtBytes(mp.OutputBytes),
		fmtBytes(mp.IntermediateBytes), fmtBytes(mp.DecoderWorkBytes), fmtBytes(mp.RuntimeBytes))
	if mp.CrossingBytes > 0 {
		fmt.Fprintf(&b, " + host-batch nodes' data %s", fmtBytes(mp.CrossingBytes))
	}
	for _, s := range mp.Scans {
		if s.Done && s.MaxWidth > 0 {
			fmt.Fprintf(&b, "; largest image of %s %dx%d (%d of %d files scanned)", s.Decoder, s.MaxWidth, s.MaxHeight, s.Scanned, s.Files)
		}
	}
	return b.String()
}

// MemoryPlanJSON is MemoryPlan as a JSON object (the C ABI's and Python's).
func (p *Pipeline) MemoryPlanJSON(wait time.Duration) []byte {
	data, _ := json.Marshal(p.MemoryPlan(wait))
	return data
}

// checkMemoryPlan runs at Build: over max_host_bytes it fails with the plan in the
// message; over the available memory it warns once on stderr.
func (p *Pipeline) checkMemoryPlan() error {
	if p.Spec.MaxHostBytes > 0 {
		mp := p.MemoryPlan(time.Minute)
		if mp.HostBytesWorst > mp.MaxHostBytes {
			return Errorf(StatusInvalidPipeline, "max_host_bytes %s is below the pipeline's %s; %s; to fit, lower %s",
				fmtBytes(mp.MaxHostBytes), fmtBytes(mp.HostBytesWorst), mp.Summary(), mp.lower())
		}
		return nil
	}
	if mp := p.MemoryPlan(0); mp.Warning != "" && os.Getenv("GODALI_TUNING_LOG") != "0" {
		fmt.Fprintf(os.Stderr, "godali: warning: %s\n", mp.Warning)
	}
	return nil
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
