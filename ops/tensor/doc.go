// Package tensor holds operators that change a tensor's type or describe it: cast and
// shapes.
package tensor
