// Package random holds the random generators random.coin_flip, random.uniform,
// random.normal and random.choice, which draw from each sample's stream (engine.RNG):
// their values depend on the seed, epoch, sample position and node only.
//
// Its operators register themselves from init functions (see package ops).
package random
