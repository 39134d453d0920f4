package decoders_test

// The tests of package decoders build pipelines with operators of other families, which
// import this package; this external test file links them all into the test binary.
import _ "github.com/godali/godali/ops/all"
