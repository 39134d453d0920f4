// Package ops holds godali's operators, one package per family (bbox, decoders,
// external, image, math, random, readers, tensor, transforms; ops/all imports every
// family for its side effects). Which operator is where, and everything about each, is
// in docs/operators-reference.md, generated from the schemas (make operator-reference):
// the schema is the one description of an operator, so no list is kept here.
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
//   - an init function that registers the schema and the "cpu" factory; the schema
//     declares the operator's facts too: input layouts and types, Sequences (frame by
//     frame), Volumetric, each gpu/mixed backend (Backends) and when conditional
//     outputs exist (OutputIf with engine.IfArg and kin);
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
