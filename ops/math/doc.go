// Package math holds godali's arithmetic expression operators: _arithmetic, one
// element-wise operator with an op argument and one to three inputs (the nodes Python's
// operators on DataNodes and godali.math functions create), and constant, a node that
// produces the same tensor for every sample (types.Constant). Type promotions, division
// and broadcasting follow DALI's documented rules ("Mathematical Expressions").
package math
