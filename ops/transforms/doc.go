// Package transforms holds DALI's affine transform generators (transforms.*;
// docs/operators-reference.md lists them). Each produces, per sample, a float32 [ndim, ndim+1] matrix
// [M | T] (a point x maps to M x + T), e.g. for coord_transform or warp_affine. Given a
// matrix as input, an operator composes with it: by default its own transform is
// applied after the input's (out = own * in), with reverse_order before it
// (out = in * own). Every argument may come per sample.
package transforms
