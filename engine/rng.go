package engine

import "math"

// RNG is a small, fast generator (PCG-XSH-RR 64/32) seeded per sample and node, so that a
// sample's random choices depend only on (seed, epoch, position, node) and never on which
// thread processes it.
type RNG struct {
	state uint64
	inc   uint64
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Seed resets the stream from a list of keys.
func (r *RNG) Seed(keys ...uint64) {
	h := uint64(0x243f6a8885a308d3)
	for _, k := range keys {
		h = splitmix(h ^ k)
	}
	r.seedHash(h)
}

// Uint32 returns the next 32 random bits.
func (r *RNG) Uint32() uint32 {
	old := r.state
	r.state = old*6364136223846793005 + r.inc
	xorshifted := uint32(((old >> 18) ^ old) >> 27)
	rot := uint32(old >> 59)
	return (xorshifted >> rot) | (xorshifted << ((-rot) & 31))
}

// Float64 returns a uniform value in [0, 1).
func (r *RNG) Float64() float64 {
	hi := uint64(r.Uint32()) << 21
	lo := uint64(r.Uint32()) >> 11
	return float64(hi|lo) / (1 << 53)
}

// Uniform returns a uniform value in [lo, hi).
func (r *RNG) Uniform(lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// Intn returns a uniform int in [0, n).
func (r *RNG) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(uint64(r.Uint32()) * uint64(n) >> 32)
}

// LogUniform returns exp(Uniform(log lo, log hi)).
func (r *RNG) LogUniform(lo, hi float64) float64 {
	return math.Exp(r.Uniform(math.Log(lo), math.Log(hi)))
}

// Normal returns a standard normal value (Box-Muller on two uniform draws; the second
// value of the pair is dropped so that every value costs the same two draws and a
// sample's values do not depend on how many came before in another call).
func (r *RNG) Normal() float64 {
	u1 := 1 - r.Float64() // (0, 1]: log stays finite
	u2 := r.Float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// opSeedTag marks the streams of nodes given their own seed, so that they never meet the
// streams of nodes seeded from the pipeline (whose last key is the node's ID).
const opSeedTag = ^uint64(0)

// StreamKeys are the first and last keys of the node's per-sample random streams
// (Seed(first, epoch, position, last)). DALI's operators take a `seed` argument: an
// operator given one draws the same values in any pipeline (whatever the pipeline's
// seed, the node's place in the graph or num_threads); the others derive their streams
// from the pipeline seed and the node.
func (n *Node) StreamKeys(pipelineSeed uint64) (uint64, uint64) {
	if n.hasOpSeed {
		return uint64(n.opSeed), opSeedTag
	}
	return pipelineSeed, uint64(n.ID)
}

// readOpSeed is the node's own `seed` argument when its schema has one and it was given
// (>= 0; DALI's -1 means "from the pipeline").
func (n *Node) readOpSeed() (int64, bool) {
	if n.Args == nil || n.Schema == nil || n.Schema.IsReader || !n.Args.Given("seed") {
		return 0, false
	}
	for _, a := range n.Schema.Args {
		if a.Name == "seed" && a.Type == ArgInt {
			if s := n.Args.Int("seed"); s >= 0 {
				return int64(s), true
			}
		}
	}
	return 0, false
}

// RandomStateArg is DALI's `_random_state` argument of its random operators: a per-sample
// input (e.g. 7 uint32 words) that replaces the sample's random stream. Samples given the
// same state draw the same values, in any node and pipeline; the state's words are the
// stream's only keys.
const RandomStateArg = "_random_state"

// randomStateTag keeps the streams of `_random_state` apart from the others.
const randomStateTag = ^uint64(0) - 1

// reseedFromState reseeds rng from the node's `_random_state` input for this sample, if
// the node has one.
func (n *Node) reseedFromState(ws *Workspace, rng *RNG) error {
	if n.Args == nil {
		return nil
	}
	i, ok := n.Args.perInput[RandomStateArg]
	if !ok {
		return nil
	}
	t, cnt, err := n.Args.perSampleList(ws, RandomStateArg, i)
	if err != nil {
		return err
	}
	if cnt == 0 || (t.DType != UInt32 && t.DType != Int32 && t.DType != UInt64 && t.DType != Int64) {
		return n.Args.ArgDataErrorf(ws, RandomStateArg, "expected a non-empty list of 32- or 64-bit integers, got %s %v", t.DType, t.Shape)
	}
	h := uint64(0x243f6a8885a308d3) ^ randomStateTag
	sz := t.DType.Size()
	for k := 0; k < cnt; k++ {
		var w uint64
		if sz == 4 {
			w = uint64(uint32(t.Data[4*k]) | uint32(t.Data[4*k+1])<<8 | uint32(t.Data[4*k+2])<<16 | uint32(t.Data[4*k+3])<<24)
		} else {
			for b := 7; b >= 0; b-- {
				w = w<<8 | uint64(t.Data[8*k+b])
			}
		}
		h = splitmix(h ^ w)
	}
	rng.seedHash(h)
	return nil
}

// seedHash sets the stream from an already mixed key (Seed's last step).
func (r *RNG) seedHash(h uint64) {
	r.inc = splitmix(h^0x13198a2e03707344)<<1 | 1
	r.state = 0
	r.Uint32()
	r.state += h
	r.Uint32()
}
