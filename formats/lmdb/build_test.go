package lmdb

import (
	"encoding/binary"
	"fmt"
)

// buildDB writes a small LMDB data file the way liblmdb lays one out (meta pages 0
// and 1, meta 0 empty at txn 0, meta 1 at txn 1; leaves packed in key order, values
// larger than inlineMax on overflow pages, branch levels until one root page). keys
// must be sorted and distinct. It gives the fuzzer and the corruption tests inputs
// with small pages; TestBuiltDBReadByPyLMDB checks liblmdb reads its output.
func buildDB(psize int, keys, vals [][]byte, inlineMax int) []byte {
	le := binary.LittleEndian
	pages := make([][]byte, 2)
	alloc := func() (uint64, []byte) {
		p := make([]byte, psize)
		pages = append(pages, p)
		n := uint64(len(pages) - 1)
		le.PutUint64(p, n)
		return n, p
	}
	type entry struct {
		key  []byte
		pgno uint64
	}
	var leafPages, branchPages, overflowPages uint64
	// addNodes packs nodes into pages of kind flags; node(i) gives the node's bytes.
	addNodes := func(n int, flags uint16, first func(i int) []byte, node func(i int) []byte) []entry {
		var out []entry
		var p []byte
		var pgno uint64
		lower, upper := pageHeader, psize
		for i := 0; i < n; i++ {
			nb := node(i)
			sz := len(nb) + len(nb)%2
			if p == nil || lower+2 > upper-sz {
				pgno, p = alloc()
				le.PutUint16(p[10:], flags)
				lower, upper = pageHeader, psize
				out = append(out, entry{first(i), pgno})
				if flags == pBranch {
					branchPages++
					// a branch page's first key is implied: its node holds none
					nb = append(nb[:6:6], 0, 0)
					le.PutUint16(nb[6:], 0)
					sz = len(nb)
				} else {
					leafPages++
				}
			}
			upper -= sz
			copy(p[upper:], nb)
			le.PutUint16(p[lower:], uint16(upper))
			lower += 2
			le.PutUint16(p[12:], uint16(lower))
			le.PutUint16(p[14:], uint16(upper))
		}
		return out
	}
	level := addNodes(len(keys), pLeaf, func(i int) []byte { return keys[i] }, func(i int) []byte {
		v := vals[i]
		nb := make([]byte, nodeHeader, nodeHeader+len(keys[i])+len(v))
		le.PutUint16(nb[0:], uint16(len(v)))
		le.PutUint16(nb[2:], uint16(len(v)>>16))
		le.PutUint16(nb[6:], uint16(len(keys[i])))
		nb = append(nb, keys[i]...)
		if len(v) <= inlineMax {
			return append(nb, v...)
		}
		le.PutUint16(nb[4:], nodeBig)
		n := (pageHeader-1+len(v))/psize + 1
		first, p := alloc()
		for j := 1; j < n; j++ {
			alloc()
		}
		overflowPages += uint64(n)
		le.PutUint16(p[10:], pOverflow)
		le.PutUint32(p[12:], uint32(n))
		buf := make([]byte, n*psize-pageHeader)
		copy(buf, v)
		for j := 0; j < n; j++ {
			lo := j*psize - pageHeader
			if j == 0 {
				copy(pages[first][pageHeader:], buf[:psize-pageHeader])
				continue
			}
			copy(pages[first+uint64(j)], buf[lo:lo+psize])
		}
		return binary.LittleEndian.AppendUint64(nb, first)
	})
	depth := uint16(1)
	for len(level) > 1 {
		prev := level
		level = addNodes(len(prev), pBranch, func(i int) []byte { return prev[i].key }, func(i int) []byte {
			nb := make([]byte, nodeHeader, nodeHeader+len(prev[i].key))
			c := prev[i].pgno
			le.PutUint16(nb[0:], uint16(c))
			le.PutUint16(nb[2:], uint16(c>>16))
			le.PutUint16(nb[4:], uint16(c>>32))
			le.PutUint16(nb[6:], uint16(len(prev[i].key)))
			return append(nb, prev[i].key...)
		})
		depth++
	}
	root := invalidPage
	if len(level) == 1 {
		root = level[0].pgno
	} else {
		depth = 0
	}
	last := uint64(len(pages) - 1)
	for i := 0; i < 2; i++ {
		p := make([]byte, psize)
		pages[i] = p
		le.PutUint64(p, uint64(i))
		le.PutUint16(p[10:], pMeta)
		le.PutUint32(p[16:], magic)
		le.PutUint32(p[20:], dataVersion)
		le.PutUint64(p[32:], uint64(max(1<<20, len(pages)*psize))) // map size
		le.PutUint32(p[40:], uint32(psize))
		le.PutUint16(p[44:], 0x08) // the free database: INTEGERKEY, empty
		le.PutUint64(p[80:], invalidPage)
		le.PutUint64(p[128:], invalidPage)
		le.PutUint64(p[136:], 1)
		if i == 1 {
			le.PutUint16(p[94:], depth)
			le.PutUint64(p[96:], branchPages)
			le.PutUint64(p[104:], leafPages)
			le.PutUint64(p[112:], overflowPages)
			le.PutUint64(p[120:], uint64(len(keys)))
			le.PutUint64(p[128:], root)
			le.PutUint64(p[136:], last)
			le.PutUint64(p[144:], 1)
		}
	}
	out := make([]byte, 0, len(pages)*psize)
	for _, p := range pages {
		out = append(out, p...)
	}
	return out
}

// sampleKV is n sorted keys with values of assorted sizes, some inline, some not.
func sampleKV(n int) (keys, vals [][]byte) {
	for i := 0; i < n; i++ {
		keys = append(keys, []byte(fmt.Sprintf("%08d", i)))
		v := make([]byte, (i*397)%1500)
		for j := range v {
			v[j] = byte(i + j*7)
		}
		vals = append(vals, v)
	}
	return keys, vals
}
