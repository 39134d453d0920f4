package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file is a line-by-line Go transcription of kernels.cu. It reads the packed
// upload buffers with the byte offsets of godali_kernels.h (written out here by hand,
// independently of the Go structs), so the CPU tests check the plans, the packing and
// the kernels' arithmetic against imaging without a GPU.

// memory is a fake device address space.
type memory struct{ regions []region }

type region struct {
	base uint64
	b    []byte
}

func (m *memory) add(b []byte) uintptr {
	base := uint64(0x10000000)
	if n := len(m.regions); n > 0 {
		last := m.regions[n-1]
		base = (last.base + uint64(len(last.b)) + 4096 + 255) &^ 255
	}
	m.regions = append(m.regions, region{base, b})
	return uintptr(base)
}

func (m *memory) at(addr uint64) []byte {
	for _, r := range m.regions {
		if addr >= r.base && addr <= r.base+uint64(len(r.b)) {
			return r.b[addr-r.base:]
		}
	}
	panic(fmt.Sprintf("emulator: address %#x outside every buffer", addr))
}

func u64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
func i32(b []byte, off int) int    { return int(int32(binary.LittleEndian.Uint32(b[off:]))) }

const halfFixed = 1 << (precisionBits - 1)

func clip8(v int32) byte {
	v >>= precisionBits
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return byte(v)
}

// emulateResize runs godali_resize_h then godali_resize_v over every sample of a packed
// batch (desc stride 64 bytes: src 0, dst 8, tmp 16, src_w 24, src_h 28, src_stride 32,
// dst_w 36, dst_h 40, channels 44, row0 48, row1 52, htaps 56, vtaps 60).
func emulateResize(m *memory, buf []byte, l resizeLayout, n int) {
	taps := func(i int) (int, int, int) {
		o := l.taps + 12*i
		return i32(buf, o), i32(buf, o+4), i32(buf, o+8)
	}
	weight := func(i int) int32 { return int32(i32(buf, l.weights+4*i)) }
	for z := 0; z < n; z++ {
		d := buf[l.descs+64*z:]
		src, dst, tmp := m.at(u64(d, 0)), m.at(u64(d, 8)), m.at(u64(d, 16))
		stride, dstW, dstH, c := i32(d, 32), i32(d, 36), i32(d, 40), i32(d, 44)
		row0, row1, htaps, vtaps := i32(d, 48), i32(d, 52), i32(d, 56), i32(d, 60)
		for r := 0; r < row1-row0; r++ {
			for x := 0; x < dstW; x++ {
				start, cnt, off := taps(htaps + x)
				in := src[(row0+r)*stride+start*c:]
				out := tmp[(r*dstW+x)*c:]
				for ch := 0; ch < c; ch++ {
					s := int32(halfFixed)
					for k := 0; k < cnt; k++ {
						s += weight(off+k) * int32(in[k*c+ch])
					}
					out[ch] = clip8(s)
				}
			}
		}
		rowlen := dstW * c
		for y := 0; y < dstH; y++ {
			for x := 0; x < dstW; x++ {
				start, cnt, off := taps(vtaps + y)
				in := tmp[(start-row0)*rowlen+x*c:]
				out := dst[y*rowlen+x*c:]
				for ch := 0; ch < c; ch++ {
					s := int32(halfFixed)
					for k := 0; k < cnt; k++ {
						s += weight(off+k) * int32(in[k*rowlen+ch])
					}
					out[ch] = clip8(s)
				}
			}
		}
	}
}

// emulateCMN runs godali_cmn (desc stride 72: src 0, dst 8, lut 16, src_w 24, src_h 28,
// src_stride 32, channels 36, crop_x 40, crop_y 44, crop_w 48, crop_h 52,
// out_channels 56, elem_size 60, chw 64, mirror 68).
func emulateCMN(m *memory, buf []byte, n int) {
	for z := 0; z < n; z++ {
		d := buf[72*z:]
		src, dst, lut := m.at(u64(d, 0)), m.at(u64(d, 8)), m.at(u64(d, 16))
		srcW, srcH, stride, c := i32(d, 24), i32(d, 28), i32(d, 32), i32(d, 36)
		cx, cy, cw, chh := i32(d, 40), i32(d, 44), i32(d, 48), i32(d, 52)
		outC, elem, chw, mirror := i32(d, 56), i32(d, 60), i32(d, 64), i32(d, 68)
		plane := cw * chh
		for oy := 0; oy < chh; oy++ {
			for ox := 0; ox < cw; ox++ {
				sx := cx + ox
				if mirror != 0 {
					sx = cx + cw - 1 - ox
				}
				sy := cy + oy
				inside := sx >= 0 && sx < srcW && sy >= 0 && sy < srcH
				pix := oy*cw + ox
				for ch := 0; ch < outC; ch++ {
					i := pix*outC + ch
					if chw != 0 {
						i = ch*plane + pix
					}
					out := dst[i*elem : (i+1)*elem]
					if !inside || ch >= c {
						clear(out)
						continue
					}
					v := int(src[sy*stride+sx*c+ch])
					copy(out, lut[(ch*256+v)*elem:])
				}
			}
		}
	}
}

// emulateCrop runs godali_crop (desc stride 64: src 0, dst 8, src_w 16, src_h 20,
// src_stride 24, channels 28, x 32, y 36, w 40, h 44, fill 48, flip_h 52, flip_v 56).
func emulateCrop(m *memory, buf []byte, n int) {
	for z := 0; z < n; z++ {
		d := buf[64*z:]
		src, dst := m.at(u64(d, 0)), m.at(u64(d, 8))
		srcW, srcH, stride, c := i32(d, 16), i32(d, 20), i32(d, 24), i32(d, 28)
		x, y, w, h := i32(d, 32), i32(d, 36), i32(d, 40), i32(d, 44)
		fill, fh, fv := byte(i32(d, 48)), i32(d, 52), i32(d, 56)
		for oy := 0; oy < h; oy++ {
			for ox := 0; ox < w; ox++ {
				sx, sy := x+ox, y+oy
				if fh != 0 {
					sx = x + w - 1 - ox
				}
				if fv != 0 {
					sy = y + h - 1 - oy
				}
				out := dst[(oy*w+ox)*c : (oy*w+ox+1)*c]
				if sx < 0 || sx >= srcW || sy < 0 || sy >= srcH {
					for i := range out {
						out[i] = fill
					}
					continue
				}
				copy(out, src[sy*stride+sx*c:])
			}
		}
	}
}

func f32(b []byte, off int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[off:])) }

// satU8 is gd_sat_u8: the fraction test on v - trunc(v).
func satU8(v float32) byte {
	if v >= 254.5 {
		return 255
	}
	if v > 0 {
		t := int(v)
		if v-float32(t) >= 0.5 {
			t++
		}
		return byte(t)
	}
	return 0
}

// emulateColor runs godali_color (desc stride 88: src 0, dst 8, w 16, h 20,
// src_stride 24, channels 28, matrix 32, out_float 36, m 40 (9 floats), off 76 (3)).
// Every float32 operation is rounded on its own, as __fmul_rn/__fadd_rn do.
func emulateColor(m *memory, buf []byte, n int) {
	for z := 0; z < n; z++ {
		d := buf[88*z:]
		src, dst := m.at(u64(d, 0)), m.at(u64(d, 8))
		w, h, stride, c := i32(d, 16), i32(d, 20), i32(d, 24), i32(d, 28)
		matrix, outFloat := i32(d, 32) != 0, i32(d, 36) != 0
		mat := func(i int) float32 { return f32(d, 40+4*i) }
		off := func(i int) float32 { return f32(d, 76+4*i) }
		store := func(i int, v float32) {
			if outFloat {
				binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
			} else {
				dst[i] = satU8(v)
			}
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				in := src[y*stride+x*c:]
				o := (y*w + x) * c
				if matrix {
					r, g, b := float32(in[0]), float32(in[1]), float32(in[2])
					for i := 0; i < 3; i++ {
						v := float32(mat(3*i)*r) + float32(mat(3*i+1)*g)
						v = float32(v) + float32(mat(3*i+2)*b)
						v = float32(v) + off(i)
						store(o+i, v)
					}
					continue
				}
				for ch := 0; ch < c; ch++ {
					store(o+ch, float32(float32(in[ch])*mat(0))+off(0))
				}
			}
		}
	}
}
