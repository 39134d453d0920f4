package engine

// Operator is one node's implementation for one device. The executor calls Setup and Run
// once per sample, on a worker thread, with that worker's Workspace: Setup declares the
// sample's output shapes, the executor provides the output memory, Run fills it. Run
// never allocates: per-worker state (decoders, scratch buffers) lives in ws.State.
type Operator interface {
	// Infer checks the inputs' metadata at build time and returns the outputs'. Unknown
	// dimensions are -1; an output whose dimensions are all known is batched densely.
	Infer(in []TensorMeta) ([]TensorMeta, error)
	Setup(ws *Workspace) error
	Run(ws *Workspace) error
}

// WorkerStateful operators keep per-worker state (one per worker thread), created once.
type WorkerStateful interface {
	NewWorkerState() any
}

// Closer is implemented by worker states that hold C resources.
type Closer interface{ Close() }

// TensorMeta is what the build knows about a data node.
type TensorMeta struct {
	DType  DType
	Layout string // "HWC", "CHW", "" for scalars and bytes
	Shape  []int  // per-sample shape; -1 for a dimension known only at run time
}

// Static reports whether every dimension is known at build time.
func (m TensorMeta) Static() bool {
	if m.Shape == nil {
		return false
	}
	for _, d := range m.Shape {
		if d < 0 {
			return false
		}
	}
	return true
}

// Tensor is one sample of a data node: shape, type and the bytes, which live in a worker
// buffer, a pool lease or a batch lease. A sample of GPU data (the output of a mixed or
// gpu node) has no Data: Dev is its device address, in memory of the pipeline's device
// pool.
type Tensor struct {
	Data   []byte
	Dev    uintptr
	Shape  []int
	DType  DType
	Layout string
}

// NumBytes is the size the shape and dtype need.
func (t *Tensor) NumBytes() int {
	n := t.DType.Size()
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// SetShape reuses the shape slice.
func (t *Tensor) SetShape(dims ...int) {
	t.Shape = append(t.Shape[:0], dims...)
}

// SampleRef identifies where a sample comes from; readers fill it when they plan a batch.
type SampleRef struct {
	Path  string
	Label int32
	Index int // index in the reader's full list
}

// Workspace is what an operator sees of the sample it processes.
type Workspace struct {
	Node     string
	In       []*Tensor
	ArgIn    []*Tensor // per-sample arguments, in the node's arg_inputs order
	Out      []*Tensor
	State    any // from NewWorkerState
	RNG      *RNG
	Ref      *SampleRef
	Sample   int   // index in the batch
	Position int64 // position in the epoch's sample stream
	Epoch    int64
	Limits   *Limits
	// Note is the sample's record for the per-batch half of a mixed node (nil for other
	// nodes): the per-sample half writes it, RunBatch reads it.
	Note *SampleNote
	// BatchSize is the pipeline's batch size (the samples of every batch, padding included).
	BatchSize int
	seed      uint64 // the node's stream keys (Node.StreamKeys), for SeedBatch
	nodeID    uint64
	gpu       *sampleGPU   // the worker's stream and the batch's GPU state, for mixed nodes
	fed       *FeedSample  // an external source's sample (feed.go)
	stream    *StreamBatch // a stream source's item and plan (feed.go)
}

// BatchOperator is implemented by the operators of "mixed" and "gpu" nodes, which the
// GPU stage runs once per batch on its own goroutine and stream (docs/cuda.md).
//
// A mixed node's Setup and Run run per sample on the worker threads, like a cpu node's,
// with host inputs and GPU outputs (the executor allocates each sample's device memory
// after Setup and sets Tensor.Dev): they parse, route, and queue per-sample GPU work on
// the worker's stream. Its RunBatch then runs on the GPU stage once the batch's CPU phase
// is over (e.g. the hardware-decoder batch).
//
// A gpu node's Setup and Run run on the GPU stage: Setup for every sample (output shapes
// from input shapes; random choices from ws.RNG, seeded as on the CPU), then the stage
// allocates the batch's outputs, then Run for every sample (record the sample in the
// operator's batch plan), then RunBatch, which queues the kernels on bw.GPU's stream.
// Nothing is waited for on the host.
type BatchOperator interface {
	Operator
	RunBatch(bw *BatchWorkspace) error
}

// BatchWorkspace is what RunBatch sees of a batch.
type BatchWorkspace struct {
	Node  string
	Size  int        // samples in the batch
	In    [][]Tensor // [input][sample]: GPU data, or host data kept for the GPU stage
	Out   [][]Tensor // [output][sample]: device tensors, allocated, Dev set
	Notes []SampleNote
	Refs  []SampleRef
	GPU   *GPUContext
	// HostWaitOutputs blocks until the previous users of Out's device memory are done
	// (GPU stage; nil elsewhere). Stream order already guarantees that for work queued
	// on GPU.Stream; it is for writers that do not honour stream order (nvJPEG's
	// hardware decoder).
	HostWaitOutputs func() error
}

// SampleNote is what the per-sample half of a mixed node tells its per-batch half about
// one sample: which decoder takes it (Route) and the window to decode.
type SampleNote struct {
	Route      int
	X, Y, W, H int
}

// Limits are pipeline-wide guards operators enforce.
type Limits struct {
	MaxImagePixels int64
	MaxFileBytes   int64 // readers refuse larger files (0: no limit)
}

// MaxImagePixels is the pipeline's max_image_pixels (0: no limit, as without Limits).
func (ws *Workspace) MaxImagePixels() int64 {
	if ws.Limits == nil {
		return 0
	}
	return ws.Limits.MaxImagePixels
}

// SeedBatch seeds r from the node's stream keys (its own seed, or the pipeline seed and
// the node), the epoch and the batch, the same for every sample of the batch: the stream of a batch-wide random choice (a permutation
// of the batch) that each sample computes whole and reads its own part of.
func (ws *Workspace) SeedBatch(r *RNG) {
	r.Seed(ws.seed, uint64(ws.Epoch), uint64(ws.Position-int64(ws.Sample)), ws.nodeID, 0xba7c5eed)
}

// ArgInputScalar returns a per-sample scalar argument as float64, or def when absent.
func (ws *Workspace) ArgInputScalar(i int) float64 {
	t := ws.ArgIn[i]
	return scalarOf(t)
}

func scalarOf(t *Tensor) float64 {
	if t == nil || len(t.Data) < t.DType.Size() || t.DType.Size() == 0 {
		return 0
	}
	return readScalar(t.Data, t.DType)
}
