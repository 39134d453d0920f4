// Package random holds the random generators (docs/operators-reference.md lists them),
// which draw from each sample's stream (engine.RNG):
// their values depend on the seed, epoch, sample position and node only.
//
// Its operators register themselves from init functions (see package ops).
package random
