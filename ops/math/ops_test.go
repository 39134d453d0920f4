package math_test

// Links every operator family into the test binary (the tests build pipelines with
// random and constant nodes).
import _ "github.com/godali/godali/ops/all"
