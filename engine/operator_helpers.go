package engine

// Helpers for the operator packages (ops/...), which register their schemas and
// factories here from their init functions and build on Operator, Workspace, Tensor and
// Args. They are thin exported names for what the executor itself uses.

// Describe names a node and its operator in messages: node "x" (op).
func Describe(node, op string) string { return describe(node, op) }

// WriteScalar stores v in b as one value of type d (plain Go conversion: integers
// truncate toward zero and wrap).
func WriteScalar(b []byte, d DType, v float64) { writeScalar(b, d, v) }

// WriteScalarSat stores v in b as one value of type d the way DALI's ConvertSat does:
// integer types round to nearest (halves away from zero) and clamp to their range; NaN
// becomes 0.
func WriteScalarSat(b []byte, d DType, v float64) { writeScalarSat(b, d, v) }

// ReadScalar reads one value of type d from b as float64.
func ReadScalar(b []byte, d DType) float64 { return readScalar(b, d) }

// SampleBytes is the size in bytes of a sample of type d and shape, ok=false when a
// dimension is negative or the size overflows.
func SampleBytes(d DType, shape []int) (int, bool) { return checkedBytes(d, shape) }
