package tensor

import (
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "get_property",
		Doc: "Returns a property of each input sample as a 1D UINT8 tensor of characters (DALI's " +
			"fn.get_property): key \"source_info\" gives the file (or archive:member) the sample " +
			"was read from (a URL without its password, signature or token), empty for data fed from " +
			"outside; \"layout\" gives its layout.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "key", Type: engine.ArgString, Required: true, Doc: "\"source_info\" or \"layout\""},
		},
	})
	engine.RegisterBackend("get_property", "cpu", func(a *engine.Args) (engine.Operator, error) {
		k := a.String("key")
		if k != "source_info" && k != "layout" {
			return nil, a.Errorf("key", "unknown property %q; valid: source_info, layout", k)
		}
		return &getPropertyOp{layout: k == "layout"}, nil
	})
}

type getPropertyOp struct{ layout bool }

func (o *getPropertyOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	// The length is known per sample only (a fed sample may carry its own layout).
	return []engine.TensorMeta{{DType: engine.UInt8, Shape: []int{-1}}}, nil
}

func (o *getPropertyOp) value(ws *engine.Workspace) string {
	if o.layout {
		return ws.In[0].Layout
	}
	if ws.Ref == nil {
		return ""
	}
	if strings.Contains(ws.Ref.Path, "://") {
		return source.Redact(ws.Ref.Path) // a URL's password, signature or token is not shown
	}
	return ws.Ref.Path
}

func (o *getPropertyOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].DType = engine.UInt8
	ws.Out[0].SetShape(len(o.value(ws)))
	return nil
}

func (o *getPropertyOp) Run(ws *engine.Workspace) error {
	copy(ws.Out[0].Data, o.value(ws))
	return nil
}
