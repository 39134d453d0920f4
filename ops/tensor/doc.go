// Package tensor holds operators that change a tensor's type, shape or layout, or
// describe it (docs/operators-reference.md lists them).
package tensor
