package imaging

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/godali/godali/internal/float16"
)

// NormalizeND describes crop_mirror_normalize of an N-dimensional sample (volumes,
// sequences, any input type): the window Start/Size of every input axis (it may leave
// the input: Fill), mirrored along MirrorAxis, normalised as NormalizeParams says, its
// channels padded to OutC with zeros, and its axes permuted (output axis i is input
// axis Perm[i]).
type NormalizeND struct {
	InShape     []int
	Start, Size []int
	Perm        []int
	ChanAxis    int
	MirrorAxis  int // -1: none
	OutC        int
	Mean, Std   []float32 // one per channel, or one for all
	Scale       float32
	Shift       float32
	Fill        []float32 // the output value outside the input: one per channel, or one for all
	Out         DType
}

// OutShape is the output's shape, in output axis order, appended to dst.
func (p *NormalizeND) OutShape(dst []int) []int {
	for _, j := range p.Perm {
		e := p.Size[j]
		if j == p.ChanAxis {
			e = p.OutC
		}
		dst = append(dst, e)
	}
	return dst
}

// CropMirrorNormalizeND writes the output of p for src (read(src, k) is input element k
// as float64) into dst, dense in output order.
func CropMirrorNormalizeND(dst, src []byte, read func(src []byte, k int) float64, p *NormalizeND) error {
	n := len(p.InShape)
	if n > 16 || len(p.Start) != n || len(p.Size) != n || len(p.Perm) != n || p.ChanAxis < 0 || p.ChanAxis >= n {
		return fmt.Errorf("crop_mirror_normalize: inconsistent %d-d description", n)
	}
	c := p.InShape[p.ChanAxis]
	if p.OutC < c || p.Out.Size() == 0 {
		return fmt.Errorf("crop_mirror_normalize: %d output channels for %d, type %v", p.OutC, c, p.Out)
	}
	var outShape, idx, inStride [16]int
	total := 1
	for i, j := range p.Perm {
		e := p.Size[j]
		if j == p.ChanAxis {
			e = p.OutC
		}
		outShape[i] = e
		total *= e
	}
	inStride[n-1] = 1
	for j := n - 2; j >= 0; j-- {
		inStride[j] = inStride[j+1] * p.InShape[j+1]
	}
	sz := p.Out.Size()
	if len(dst) < total*sz {
		return fmt.Errorf("crop_mirror_normalize: output buffer has %d bytes, expected %d", len(dst), total*sz)
	}
	if total == 0 {
		return nil
	}
	perCh := func(v []float32, ch int, def float32) float32 {
		switch {
		case len(v) == 0:
			return def
		case len(v) == 1:
			return v[0]
		case ch < len(v):
			return v[ch]
		}
		return def
	}
	for k := 0; k < total; k++ {
		ch, off, inside := 0, 0, true
		for i := 0; i < n; i++ {
			j, o := p.Perm[i], idx[i]
			if j == p.ChanAxis {
				ch = o
				off += o * inStride[j]
				continue
			}
			if j == p.MirrorAxis {
				o = p.Size[j] - 1 - o
			}
			x := p.Start[j] + o
			if x < 0 || x >= p.InShape[j] {
				inside = false
			}
			off += x * inStride[j]
		}
		var f float64
		switch {
		case !inside:
			if ch < c || len(p.Fill) > ch {
				f = float64(perCh(p.Fill, ch, 0))
			}
		case ch >= c: // pad_output's channels
		default:
			mean, std := float64(perCh(p.Mean, ch, 0)), float64(perCh(p.Std, ch, 1))
			f = (read(src, off)-mean)/std*float64(p.Scale) + float64(p.Shift)
		}
		storeNormalized(dst[k*sz:], f, p.Out)
		for i := n - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < outShape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return nil
}

// storeNormalized writes f as crop_mirror_normalize's output type, as NormalizedBits
// converts it.
func storeNormalized(b []byte, f float64, t DType) {
	switch t {
	case Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(f)))
	case Float16:
		binary.LittleEndian.PutUint16(b, float16.FromFloat32(float32(f)))
	case UInt8:
		b[0] = uint8(math.Min(math.Max(math.Round(f), 0), 255))
	case Int8:
		b[0] = uint8(int8(math.Min(math.Max(math.Round(f), -128), 127)))
	}
}
