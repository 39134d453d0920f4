package transforms

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "transforms.combine",
		Doc: "Combines two or more affine transforms (each float32 [ndim, ndim+1]) into one, applied in input " +
			"order: combine(T0, T1) maps x to T1(T0(x)); with reverse_order, to T0(T1(x)).",
		Sequences: engine.Sequences{PerFrame: true, FramesFromArgs: true},
		MinInputs: 2, MaxInputs: 64, Outputs: []string{"transform"}, HostOnly: true,
		Args: []engine.ArgSpec{reverseOrderArg, seedArg},
	})
	engine.RegisterBackend("transforms.combine", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &combineOp{args: a, reverse: a.Bool("reverse_order")}, nil
	})
}

type combineOp struct {
	args    *engine.Args
	reverse bool
}

func (o *combineOp) NewWorkerState() any { return &state{} }

func (o *combineOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	n := -1
	for i, m := range in {
		d, err := inputDims(o.args, i, m)
		if err != nil {
			return nil, err
		}
		if d > 0 && n > 0 && d != n {
			return nil, o.args.Invalidf("input %d is a %d-D transform but input 0 is %d-D", i, d, n)
		}
		if d > 0 {
			n = d
		}
	}
	return outMeta(n), nil
}

func (o *combineOp) Setup(ws *engine.Workspace) error {
	n := 0
	for i := range ws.In {
		d, err := sampleDims(o.args, ws, i)
		if err != nil {
			return err
		}
		if i > 0 && d != n {
			return o.args.DataErrorf(ws, "input %d is a %d-D transform but input 0 is %d-D", i, d, n)
		}
		n = d
	}
	ws.State.(*state).n = n
	ws.Out[0].SetShape(n, n+1)
	return nil
}

func (o *combineOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*state)
	n := st.n
	k := (n + 1) * (n + 1)
	st.own, st.in, st.out = grow(st.own, k), grow(st.in, k), grow(st.out, k)
	identity(st.out, n)
	for i := range ws.In {
		readMatrix(ws.In[i], n, st.in)
		copy(st.own, st.out)
		if o.reverse {
			mul(st.out, st.own, st.in, n) // T0 * T1 * ...
		} else {
			mul(st.out, st.in, st.own, n) // ... * T1 * T0
		}
	}
	writeMatrix(ws.Out[0].Data, st.out, n)
	return nil
}
