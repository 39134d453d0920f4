package decoders

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/ops/internal/window"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.image_random_crop",
		Doc: "Decodes a random crop of each image (area and aspect ratio drawn as torchvision's " +
			"RandomResizedCrop does, center crop after num_attempts failures), decoding only " +
			"the region it needs and downscaling in the DCT domain when the consumer shrinks it anyway.",
		Backends:  map[string]engine.BackendFacts{"mixed": {Doc: "nvJPEG, decoding the crop window"}},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: append(append(append([]engine.ArgSpec{}, decoderArgs...), window.RandomCropArgs...),
			engine.ArgSpec{Name: "dct_downscale", Type: engine.ArgBool, Default: true, Doc: "godali only: when the consumer (a resize) shrinks the window at least 2x, JPEG windows are scaled down by 1/2, 1/4 or 1/8 in the DCT domain while decoding (faster; pixels differ by a few levels from a full-size decode + resize); false decodes the window at full size, as PIL does"}),
	})
	engine.RegisterBackend("decoders.image_random_crop", "cpu", func(a *engine.Args) (engine.Operator, error) { return newCPUDecoder(a, true) })
}
