package engine_test

// The engine's own tests (package engine) build pipelines of real operators. Those live
// in ops/..., which import the engine, so the tests cannot import them; this external
// test file links them into the test binary instead, and their init functions register
// them before any test runs.
import _ "github.com/godali/godali/ops/all"
