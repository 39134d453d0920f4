package lz4

import (
	"bytes"
	"math/rand"
	"testing"
)

// encodeSequences writes an LZ4 block by hand: each sequence is literals then a match
// (offset, length >= 4); the last has literals only. Lengths past 14 use the 255-run
// extension, as the format says.
func encodeSequences(seqs []struct {
	lit      []byte
	off, len int
}) []byte {
	var b []byte
	ext := func(n int) {
		for ; n >= 255; n -= 255 {
			b = append(b, 255)
		}
		b = append(b, byte(n))
	}
	for i, s := range seqs {
		last := i == len(seqs)-1
		ml := s.len - 4
		tok := byte(min(len(s.lit), 15)) << 4
		if !last {
			tok |= byte(min(ml, 15))
		}
		b = append(b, tok)
		if len(s.lit) >= 15 {
			ext(len(s.lit) - 15)
		}
		b = append(b, s.lit...)
		if last {
			break
		}
		b = append(b, byte(s.off), byte(s.off>>8))
		if ml >= 15 {
			ext(ml - 15)
		}
	}
	return b
}

func TestDecodeBlock(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789"), 40) // 400 literals: a 255-run extension
	type seq = struct {
		lit      []byte
		off, len int
	}
	for _, c := range []struct {
		name string
		seqs []seq
		want []byte
	}{
		{"literals only", []seq{{lit: []byte("hello")}}, []byte("hello")},
		{"empty", []seq{{}}, nil},
		{"match", []seq{{[]byte("abcd"), 4, 8}, {lit: []byte("!")}}, []byte("abcdabcdabcd!")},
		{"overlapping run", []seq{{[]byte("x"), 1, 300}, {lit: nil}}, bytes.Repeat([]byte("x"), 301)},
		{"long literals", []seq{{long, 400, 19}, {lit: []byte("z")}}, append(append(append([]byte{}, long...), long[:19]...), 'z')},
	} {
		src := encodeSequences(c.seqs)
		dst := make([]byte, len(c.want))
		n, err := DecodeBlock(dst, src)
		if err != nil || !bytes.Equal(dst[:n], c.want) {
			t.Errorf("%s: %d bytes, %v; want %q", c.name, n, err, c.want)
		}
		if len(c.want) > 0 {
			if _, err := DecodeBlock(dst[:len(c.want)-1], src); err != ErrTooLong {
				t.Errorf("%s: one byte short of room: %v, want ErrTooLong", c.name, err)
			}
		}
	}
}

func TestDecodeBlockRejectsCorrupt(t *testing.T) {
	dst := make([]byte, 64)
	for _, src := range [][]byte{
		{},                     // no token
		{0x50, 'a', 'b'},       // 5 literals promised, 2 given
		{0x10, 'a', 0, 0},      // offset 0
		{0x10, 'a', 2, 0},      // offset past the output
		{0x10, 'a', 1},         // truncated offset
		{0xf0, 255, 255},       // unterminated length
		{0x1f, 'a', 1, 0, 255}, // match length runs off the input
	} {
		if _, err := DecodeBlock(dst, src); err != ErrCorrupt && err != ErrTooLong {
			t.Errorf("%x: %v, want ErrCorrupt", src, err)
		}
	}
	// Random bytes never panic and never write past dst.
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		src := make([]byte, rng.Intn(40))
		rng.Read(src)
		DecodeBlock(dst[:rng.Intn(64)], src)
	}
}
