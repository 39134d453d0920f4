// Package ops holds godali's operators, one package per family:
//
//	ops/readers   readers.file: which samples make a batch, and their bytes (via source/)
//	ops/decoders  decoders.image, decoders.image_random_crop (cpu; mixed with nvJPEG)
//	ops/image     resize, random_resized_crop, crop, flip, crop_mirror_normalize,
//	              brightness_contrast, hsv, color_twist, rotate, gaussian_blur
//	ops/random    random.coin_flip, random.uniform, random.normal, random.choice
//	ops/all       imports every family for its side effects
//
// Each family registers its operators from init functions, the way database/sql drivers
// do: engine.RegisterSchema for the schema (name, doc, inputs, outputs, arguments),
// engine.RegisterBackend for each device's factory. A name registered twice, or a
// backend without a schema, panics at init, so every test run catches it. Programs
// (capi, tests) import _ "github.com/godali/godali/ops/all".
//
// # Adding an operator
//
// Add one file to the family's package, say ops/image/posterize.go:
//
//   - an init function that registers the schema and the "cpu" factory;
//   - the factory, which checks the arguments (Args.Int, Args.Floats, Args.Errorf naming
//     the argument) and returns an engine.Operator;
//   - Infer (output metadata at build time), Setup (each sample's output shapes) and Run
//     (fills the outputs the executor allocated, never allocating itself: per-worker
//     scratch comes from NewWorkerState, engine.WorkerStateful).
//
// A GPU variant goes next to it in posterize_gpu.go under //go:build cuda: it registers
// the "gpu" backend and implements engine.BatchOperator with a kernel from kernels/. Tests
// go in posterize_test.go (and posterize_gpu_test.go), compared with an independent
// reference. A package's own tests cannot import ops/all (it imports the package under
// test), so a family whose tests build pipelines with other families' operators links
// them in from an external test file, as ops/decoders/ops_test.go does. A new family is
// a new directory under ops/ plus one import line in ops/all.
//
// A reader also implements engine.BatchSource (and engine.SourceCheckpointer for
// checkpoints), sets IsReader in its schema, and reads its bytes through a
// source.Source. docs/operators.md has the longer version.
package ops
