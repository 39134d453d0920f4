package external

import (
	"sync"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "python_function",
		Doc: "Calls a function of the host program on every batch (DALI's fn.python_function, " +
			"fn.dl_tensor_python_function, fn.torch_python_function; the Python package wraps the " +
			"function and registers it with godali_host_function_register, which gives function_id). " +
			"The function sees every sample of every input at once and returns each output " +
			"sample's data, of any type and shape, which the pipeline copies. Its outputs' type " +
			"and dimensions are known only when it runs, so only another python_function, cast, reshape or flip can " +
			"take them as inputs inside the pipeline; any operator takes them as per-sample " +
			"arguments (checked when it runs), and they can always be pipeline outputs.",
		MinInputs: 0, MaxInputs: 64, Outputs: []string{"out0"}, VariableOutputs: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "function_id", Type: engine.ArgInt, Required: true, Doc: "the id godali_host_function_register returned"},
			{Name: "num_outputs", Type: engine.ArgInt, Default: 1, Doc: "outputs the function returns (0: a sink, called for its side effects)"},
			{Name: "output_layouts", Type: engine.ArgStringList, Doc: "layout of each output, in order; outputs past the list's end have none"},
		},
	})
	engine.RegisterBackend("python_function", "cpu", newPythonFunction)
}

// HostCall is one call of a host function over a batch.
type HostCall struct {
	Function   uint64
	Node       string
	NumOutputs int
	Samples    int
	Epoch      int64
	Iteration  int64
	Pipeline   *engine.Pipeline   // the pipeline that runs the call
	In         [][]*engine.Tensor // [input][sample], host memory valid during the call
	// Output gives sample i of output k its type and shape and returns the memory to
	// fill (before the call returns).
	Output func(k, i int, dt engine.DType, shape []int) ([]byte, error)
}

// HostFunctions calls the functions a host program registered; the C library provides
// them (capi/hostfunc.go).
type HostFunctions interface {
	Known(id uint64) bool
	Call(c *HostCall) error
}

var hostFns struct {
	sync.RWMutex
	h HostFunctions
}

// SetHostFunctions installs the host functions' caller.
func SetHostFunctions(h HostFunctions) {
	hostFns.Lock()
	hostFns.h = h
	hostFns.Unlock()
}

func hostFunctions() HostFunctions {
	hostFns.RLock()
	defer hostFns.RUnlock()
	return hostFns.h
}

type pythonFunction struct {
	id         uint64
	numOutputs int
	layouts    []string
}

func newPythonFunction(a *engine.Args) (engine.Operator, error) {
	id := a.Int("function_id")
	h := hostFunctions()
	if id <= 0 || h == nil || !h.Known(uint64(id)) {
		return nil, a.Errorf("function_id", "%d is not a registered host function (godali_host_function_register)", id)
	}
	n := a.Int("num_outputs")
	if n < 0 || n > 64 {
		return nil, a.Errorf("num_outputs", "expected 0 to 64, got %d", n)
	}
	var layouts []string
	if a.Given("output_layouts") {
		layouts = a.Strings("output_layouts")
	}
	if len(layouts) > max(n, 1) {
		return nil, a.Errorf("output_layouts", "the length of output_layouts (%d) is greater than the number of outputs (%d)", len(layouts), n)
	}
	return &pythonFunction{id: uint64(id), numOutputs: n, layouts: layouts}, nil
}

// Infer: the outputs' type and dimensions are known only when the function has run.
func (o *pythonFunction) Infer([]engine.TensorMeta) ([]engine.TensorMeta, error) {
	out := make([]engine.TensorMeta, max(o.numOutputs, 1)) // a sink still names one output
	for k := range out {
		lay := ""
		if k < len(o.layouts) {
			lay = o.layouts[k]
		}
		out[k] = engine.DynamicMeta(lay)
	}
	return out, nil
}

// Setup and Run are not used: the executor calls RunHostBatch.
func (o *pythonFunction) Setup(*engine.Workspace) error {
	return engine.Errorf(engine.StatusInternal, "python_function runs per batch")
}

func (o *pythonFunction) Run(*engine.Workspace) error {
	return engine.Errorf(engine.StatusInternal, "python_function runs per batch")
}

// SerialCalls: the executor calls the function one batch at a time, in iteration order
// (engine.SerialHostBatch), as DALI does: a function may keep state from one batch to
// the next, and may return the same buffer every time (its outputs are copied before
// the call returns).
func (o *pythonFunction) SerialCalls() {}

// RunsOnParts: with the pipeline's sub_batch_size, the function is called once per part
// of the batch, with that part's samples (engine.SubBatchOperator; docs/pipeline.md).
func (o *pythonFunction) RunsOnParts() {}

// RunHostBatch calls the function once with the whole batch (or one part of it).
func (o *pythonFunction) RunHostBatch(hw *engine.HostBatchWorkspace) error {
	h := hostFunctions()
	if h == nil {
		return engine.Errorf(engine.StatusState, "no host function caller is installed")
	}
	written := make([]int, o.numOutputs)
	c := &HostCall{Function: o.id, Node: hw.Node, NumOutputs: o.numOutputs, Samples: hw.Size,
		Epoch: hw.Epoch, Iteration: hw.Iteration, Pipeline: hw.Pipeline, In: hw.In,
		Output: func(k, i int, dt engine.DType, shape []int) ([]byte, error) {
			if k < 0 || k >= o.numOutputs || i < 0 || i >= hw.Size {
				return nil, engine.Errorf(engine.StatusInvalidArgument, "output %d sample %d: out of range (%d outputs, %d samples)", k, i, o.numOutputs, hw.Size)
			}
			written[k]++
			return hw.Output(k, i, dt, shape)
		}}
	if err := h.Call(c); err != nil {
		return err
	}
	for k, n := range written {
		if n < hw.Size {
			return engine.Errorf(engine.StatusData, "the function gave %d samples of output %d; the batch has %d", n, k, hw.Size)
		}
	}
	return nil
}
