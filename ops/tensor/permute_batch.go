package tensor

import (
	"github.com/godali/godali/engine"
)

// permute_batch reads other samples of the batch, so it is a host-batch operator
// (engine.HostBatchOperator): the executor calls RunHostBatch once every sample of its
// input is ready.

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "permute_batch",
		Doc: "Builds the output batch from samples of the input batch (DALI's fn.permute_batch): output " +
			"sample i is input sample indices[i]. indices is a list with one entry per sample of the batch, " +
			"or a batch of scalars (e.g. batch_permutation's output); each must be in [0, batch size). " +
			"Repetitions and omissions are allowed. Any type, shape and layout.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "indices", Type: engine.ArgIntList, Required: true, TensorInput: true,
				Doc: "the input sample of each output sample: a list as long as the batch, or one scalar per sample"},
		},
	})
	engine.RegisterBackend("permute_batch", "cpu", func(a *engine.Args) (engine.Operator, error) {
		o := &permuteBatchOp{args: a, perSample: a.AnyPerSample("indices")}
		if !o.perSample {
			for i, v := range a.Ints("indices") {
				if v < 0 {
					return nil, a.Errorf("indices", "indices[%d] = %d is negative; sample indices are in [0, batch size)", i, v)
				}
				o.indices = append(o.indices, int(v))
			}
		}
		return o, nil
	})
}

type permuteBatchOp struct {
	args      *engine.Args
	perSample bool
	indices   []int // the constant list
}

func (o *permuteBatchOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in[0].IsDynamic() { // python_function's output: its type is known when it runs
		return []engine.TensorMeta{engine.DynamicMeta(in[0].Layout)}, nil
	}
	if in[0].DType.Size() == 0 {
		return nil, o.args.Invalidf("input must be a tensor of a numeric type, got %s", in[0].DType)
	}
	// The samples are the input's: its type, rank, layout and any extent every input
	// sample shares.
	return []engine.TensorMeta{in[0]}, nil
}

// Setup and Run are not called: RunHostBatch does the work.
func (o *permuteBatchOp) Setup(*engine.Workspace) error {
	return engine.Errorf(engine.StatusInternal, "%s: permute_batch runs per batch", o.args.Where())
}

func (o *permuteBatchOp) Run(*engine.Workspace) error { return o.Setup(nil) }

// index is the input sample that output sample i copies.
func (o *permuteBatchOp) index(hw *engine.HostBatchWorkspace, i int, ws *engine.Workspace) (int, error) {
	a := o.args
	if !o.perSample {
		if len(o.indices) != hw.Size {
			return 0, a.DataErrorf(ws, "argument \"indices\": the number of sample indices %d does not match the current batch size, which is %d", len(o.indices), hw.Size)
		}
		return o.indices[i], nil
	}
	return a.IntAt(ws, "indices")
}

func (o *permuteBatchOp) RunHostBatch(hw *engine.HostBatchWorkspace) error {
	a := o.args
	var ws engine.Workspace
	for i := 0; i < hw.Size; i++ {
		w := hw.Sample(i, &ws)
		src, err := o.index(hw, i, w)
		if err != nil {
			return err
		}
		if src < 0 || src >= hw.Size {
			return a.ArgDataErrorf(w, "indices", "indices[%d]: Sample index out of range. %d is not a valid index for an input batch of %d tensors.", i, src, hw.Size)
		}
		in := hw.In[0][src]
		data, err := hw.OutputLayout(0, i, in.DType, in.Shape, in.Layout)
		if err != nil {
			return err
		}
		copy(data, in.Data)
	}
	return nil
}
