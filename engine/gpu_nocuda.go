//go:build !cuda

package engine

// The CPU flavour's GPU stage: the types exist so that the executor compiles without
// build tags, and every entry point reports ErrNoCUDA. BuildGraph already refuses mixed
// and gpu nodes in this flavour (their backends are registered only with the cuda tag),
// so none of this runs for a real operator.

type gpuStage struct{}

type gpuBatch struct{}

type workerGPU struct{}

type sampleGPU struct {
	worker *workerGPU
	batch  *gpuBatch
}

type deviceOutput struct{}

// GPUContext is what the operators of mixed and gpu nodes get from the GPU stage; the
// CPU flavour has none.
type GPUContext struct{}

// DeviceRef holds exported GPU memory; the CPU flavour never hands one out.
type DeviceRef struct{}

func newGPUStage(p *Pipeline) (*gpuStage, error) {
	name := ""
	if len(p.Part.Batch) > 0 {
		n := p.Part.Batch[0]
		name = describe(n.Name, n.OpName) + ` on device "` + n.Device + `"`
	}
	return nil, &Error{Status: StatusNoCUDA, Msg: name, Err: ErrNoCUDA}
}

func (st *gpuStage) workerCPUs(user []int, n int) ([]int, []int) { return user, nil }
func (st *gpuStage) newWorker() *workerGPU                       { return nil }
func (st *gpuStage) newBatch(b *Batch) (*gpuBatch, error)        { return nil, ErrNoCUDA }
func (st *gpuStage) submit(b *Batch)                             { close(b.done) }
func (st *gpuStage) close()                                      {}
func (w *workerGPU) drain()                                      {}
func (w *workerGPU) close()                                      {}
func (gb *gpuBatch) note(n *Node, i int) *SampleNote             { return nil }
func (gb *gpuBatch) keepHost(v, i int, t *Tensor)                {}
func (gb *gpuBatch) release()                                    {}
func (o *OutputBatch) deviceDenseView() (View, error)            { return View{}, ErrNoCUDA }
func (o *OutputBatch) deviceSampleView(i int) (View, error)      { return View{}, ErrNoCUDA }
func (gb *gpuBatch) keptSample(v, i int, t *Tensor, need int) ([]byte, error) {
	return nil, ErrNoCUDA
}
func (gb *gpuBatch) deviceSample(v, i int, t *Tensor, need int) (uintptr, error) {
	return 0, ErrNoCUDA
}

// Wait reports ErrNoCUDA.
func (r *DeviceRef) Wait(dlpackStream int64) error { return ErrNoCUDA }

// Sync reports ErrNoCUDA.
func (r *DeviceRef) Sync() error { return ErrNoCUDA }

// Release does nothing.
func (r *DeviceRef) Release() {}

// Exported does nothing.
func (r *DeviceRef) Exported(d int64) {}

// gpuNodeTimes: the CPU flavour has no GPU stage.
func (p *Pipeline) gpuNodeTimes() []nodeTimes { return nil }
