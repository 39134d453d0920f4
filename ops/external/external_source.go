package external

import (
	"unsafe"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "external_source",
		Doc: "Samples fed from outside the pipeline (DALI's fn.external_source): each batch the " +
			"pipeline plans takes the next batch queued for this node by feed_input " +
			"(Pipeline.FeedInput, godali_pipeline_feed_input). The node's name is the feed's name. " +
			"Fed memory is read in place and released when the batch that used it is released.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "dtype", Type: engine.ArgDType, Required: true, Doc: "element type of the fed samples"},
			{Name: "ndim", Type: engine.ArgInt, Required: true, Doc: "number of dimensions of each fed sample"},
			{Name: "layout", Type: engine.ArgString, Default: "", Doc: "layout of the samples (e.g. \"HWC\"); fed data with another layout is refused"},
			{Name: "shape", Type: engine.ArgIntList, Doc: "per-sample shape when every sample has it (-1: any size); fed samples of another shape are refused. Outputs with a fixed shape are batched densely"},
			{Name: "no_copy", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; the feeder decides whether its memory is copied"},
		},
	})
	engine.RegisterBackend("external_source", "cpu", newExternalSource)
}

type externalSource struct {
	meta engine.TensorMeta
}

func newExternalSource(a *engine.Args) (engine.Operator, error) {
	d := a.DType("dtype")
	ndim := a.Int("ndim")
	if ndim < 0 || ndim > 16 {
		return nil, a.Errorf("ndim", "must be in [0, 16], got %d", ndim)
	}
	layout := a.String("layout")
	if layout != "" && len(layout) != ndim {
		return nil, a.Errorf("layout", "%q has %d dimensions but ndim is %d", layout, len(layout), ndim)
	}
	shape := make([]int, ndim)
	for i := range shape {
		shape[i] = -1
	}
	if a.GivenConstant("shape") {
		s := a.Ints("shape")
		if len(s) != ndim {
			return nil, a.Errorf("shape", "%v has %d dimensions but ndim is %d", s, len(s), ndim)
		}
		for i, v := range s {
			if v < -1 || v > 1<<40 {
				return nil, a.Errorf("shape", "dimension %d is %d; expected -1 (any) or a size >= 0", i, v)
			}
			shape[i] = int(v)
		}
	}
	return &externalSource{meta: engine.TensorMeta{DType: d, Layout: layout, Shape: shape}}, nil
}

// ExternalSource marks the operator for the executor's feed queues.
func (*externalSource) ExternalSource() {}

func (e *externalSource) Infer([]engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := e.meta
	m.Shape = append([]int{}, m.Shape...) // non-nil: a 0-D source has known rank 0
	return []engine.TensorMeta{m}, nil
}

func (e *externalSource) Setup(ws *engine.Workspace) error {
	s := ws.FedSample()
	if s == nil {
		return engine.Errorf(engine.StatusInternal, "external source %q: no fed sample for sample %d", ws.Node, ws.Sample)
	}
	ws.Out[0].SetShape(s.Shape...)
	ws.Out[0].Layout = e.meta.Layout
	if e.meta.Layout == "" {
		ws.Out[0].Layout = s.Layout // feed_input(..., layout=...)
	}
	return nil
}

func (e *externalSource) Run(ws *engine.Workspace) error {
	s := ws.FedSample()
	out := ws.Out[0].Data
	if len(out) == 0 || (len(s.Data) > 0 && unsafe.SliceData(out) == unsafe.SliceData(s.Data)) {
		return nil // the executor handed the fed memory itself on (no copy)
	}
	copy(out, s.Data)
	return nil
}
