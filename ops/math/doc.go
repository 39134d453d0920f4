// Package math holds godali's arithmetic expression operators, among them _arithmetic,
// one element-wise operator with an op argument and one to three inputs (the nodes
// Python's operators on DataNodes and godali.math functions create), constants and
// reductions (docs/operators-reference.md lists them). Type promotions, division
// and broadcasting follow DALI's documented rules ("Mathematical Expressions").
package math
