package random

import (
	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "batch_permutation",
		Doc: "Produces a random permutation of the batch's sample indices, one INT32 scalar per " +
			"sample (DALI's fn.batch_permutation), e.g. the indices of permute_batch. With " +
			"allow_repetitions an index may repeat (and another be missing); no_fixed_points " +
			"keeps sample i from getting index i (a batch of one sample then fails).",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"indices"}, Random: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "allow_repetitions", Type: engine.ArgBool, Default: false, Doc: "draw each index independently (with repetitions)"},
			{Name: "no_fixed_points", Type: engine.ArgBool, Default: false, Doc: "never map sample i to index i"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
		},
	})
	engine.RegisterBackend("batch_permutation", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &batchPermutationOp{args: a, rep: a.Bool("allow_repetitions"), nofix: a.Bool("no_fixed_points")}, nil
	})
}

type batchPermutationOp struct {
	args       *engine.Args
	rep, nofix bool
}

type permState struct {
	rng  engine.RNG
	perm []int32
}

func (o *batchPermutationOp) NewWorkerState() any { return &permState{} }

func (o *batchPermutationOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{{DType: engine.Int32, Shape: []int{}}}, nil
}

func (o *batchPermutationOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].DType = engine.Int32
	ws.Out[0].SetShape()
	if o.nofix && ws.BatchSize < 2 {
		return o.args.ArgDataErrorf(ws, "no_fixed_points", "a batch of %d sample has no permutation without fixed points", ws.BatchSize)
	}
	return nil
}

// permutation draws the batch's permutation from a stream seeded by the batch, so that
// every sample, on whichever worker, computes the same one.
func (o *batchPermutationOp) permutation(ws *engine.Workspace, st *permState) []int32 {
	n := ws.BatchSize
	ws.SeedBatch(&st.rng)
	r := &st.rng
	if cap(st.perm) < n {
		st.perm = make([]int32, n)
	}
	p := st.perm[:n]
	if o.rep {
		for i := range p {
			if o.nofix {
				j := r.Intn(n - 1)
				if j >= i {
					j++
				}
				p[i] = int32(j)
			} else {
				p[i] = int32(r.Intn(n))
			}
		}
		return p
	}
	for {
		for i := range p {
			p[i] = int32(i)
		}
		for i := n - 1; i > 0; i-- { // Fisher-Yates
			j := r.Intn(i + 1)
			p[i], p[j] = p[j], p[i]
		}
		if !o.nofix || !hasFixedPoint(p) {
			return p // a random permutation is a derangement with probability ~1/e
		}
	}
}

func hasFixedPoint(p []int32) bool {
	for i, v := range p {
		if int(v) == i {
			return true
		}
	}
	return false
}

func (o *batchPermutationOp) Run(ws *engine.Workspace) error {
	p := o.permutation(ws, ws.State.(*permState))
	engine.WriteScalar(ws.Out[0].Data, engine.Int32, float64(p[ws.Sample]))
	return nil
}
