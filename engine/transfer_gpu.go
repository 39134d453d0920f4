//go:build cuda

package engine

func init() {
	RegisterSchema(&Schema{
		Name: "_to_gpu",
		Doc: "Copies host data to the GPU (DataNode.gpu()). Each worker uploads its samples " +
			"from pinned memory on its own stream while the CPU phase goes on.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"data"},
		Backends: map[string]BackendFacts{"mixed": {}},
	})
	RegisterBackend("_to_gpu", "mixed", func(a *Args) (Operator, error) { return &toGPU{}, nil })
}

// toGPU is the _to_gpu operator: the per-sample half queues the upload of the sample
// (kept in pinned memory) on the worker's stream; the batch half has nothing left to do.
type toGPU struct{}

func (o *toGPU) Infer(in []TensorMeta) ([]TensorMeta, error) { return []TensorMeta{in[0]}, nil }

func (o *toGPU) Setup(ws *Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *toGPU) Run(ws *Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	n := out.NumBytes()
	if n == 0 {
		return nil
	}
	stream, err := ws.gpu.begin()
	if err != nil {
		return err
	}
	w := ws.gpu.worker
	if err := w.st.ctx.Device.CopyHtoDAsync(out.Dev, pinnedPtr(in.Data), n, stream); err != nil {
		return cudaError("uploading to the GPU", err)
	}
	return ws.gpu.end()
}

func (o *toGPU) RunBatch(bw *BatchWorkspace) error { return nil }
