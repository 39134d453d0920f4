// Package lmdb reads LMDB databases (the key-value store Caffe and Caffe2 keep their
// data sets in) read-only, in pure Go, through bounds-checked reads of the data file.
//
// Nothing is memory-mapped and no C library is involved: a truncated or corrupt
// data.mdb is reported as an error wrapping formats.ErrMalformed, naming the file and
// the page, and never crashes the process (a mapped file that lies gives SIGBUS, and
// liblmdb trusts its pages). Both meta pages are checked (magic, version, page size),
// the newer one is used, the file must hold the pages it counts (a truncated file is
// refused at once), its root and depth are checked, and every
// page number, node offset, key and value size and overflow run read from the file is
// checked before it is followed or allocated. Open walks the whole tree once, so a
// database that opens has a well-formed tree; a value's overflow pages are checked
// when the value is read.
//
// The on-disk layout is LMDB 0.9's (data version 1) as written by 64-bit
// little-endian hosts: the layout of the PyPI lmdb package, Caffe's tools and
// liblmdb on x86-64 and arm64. Only the unnamed main database with default flags is
// read: named sub-databases and MDB_DUPSORT / MDB_INTEGERKEY databases (Caffe never
// writes them) are refused with an error saying so.
package lmdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/godali/godali/formats"
)

// On-disk constants of LMDB 0.9 (64-bit).
const (
	magic       = 0xBEEFC0DE
	dataVersion = 1
	pageHeader  = 16 // pgno (8), pad (2), flags (2), lower/upper or overflow count (4)
	nodeHeader  = 8  // data size lo/hi or child page (4), flags (2), key size (2)
	metaSize    = 152
	invalidPage = ^uint64(0)

	// MaxDepth bounds the tree's depth (liblmdb's cursor stack holds 32 pages).
	MaxDepth = 32
	minPage  = 512
	maxPage  = 1 << 16
)

// Page flags.
const (
	pBranch   = 0x01
	pLeaf     = 0x02
	pOverflow = 0x04
	pMeta     = 0x08
	pLeaf2    = 0x20
	pSubPage  = 0x40
	pKind     = pBranch | pLeaf | pOverflow | pMeta | pLeaf2 | pSubPage
)

// Leaf node flags.
const (
	nodeBig     = 0x01 // the value lives on overflow pages
	nodeSubData = 0x02 // a named sub-database
	nodeDupData = 0x04 // MDB_DUPSORT duplicates
)

// ErrNotFound is returned by Get for a key the database does not hold.
var ErrNotFound = errors.New("key not found")

// Record locates one key-value pair: the key, the leaf page holding its node and the
// node's index there. Records come from DB.Records and are read with DB.Read.
type Record struct {
	Key   []byte
	Page  uint64
	Index int
}

// DB is a database opened read-only, safe for concurrent use.
type DB struct {
	r      io.ReaderAt
	f      *os.File // nil when opened over a caller's ReaderAt
	size   int64
	name   string
	psize  int
	lastPg uint64
	meta   meta
	recs   []Record
	pages  sync.Pool // *[]byte of psize
}

// meta is what the reader uses of a meta page.
type meta struct {
	psize    uint32
	flags    uint16 // main database flags
	depth    uint16
	branches uint64
	leaves   uint64
	entries  uint64
	root     uint64
	lastPg   uint64
	txnid    uint64
}

// Open opens the LMDB environment at path (a directory holding data.mdb, or the data
// file itself), reads its meta pages and walks its tree. Errors name the data file.
func Open(path string) (*DB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	file := path
	if st.IsDir() {
		file = filepath.Join(path, "data.mdb")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fst.Mode().IsRegular() {
		f.Close()
		return nil, formats.Malformedf("lmdb %s: not a regular file", file)
	}
	db, err := OpenReader(f, fst.Size(), file)
	if err != nil {
		f.Close()
		return nil, err
	}
	db.f = f
	return db, nil
}

// OpenReader opens the data file r of size bytes, named name in errors.
func OpenReader(r io.ReaderAt, size int64, name string) (*DB, error) {
	db := &DB{r: r, size: size, name: name}
	m, err := db.readMetas()
	if err != nil {
		return nil, err
	}
	db.meta, db.psize, db.lastPg = m, int(m.psize), m.lastPg
	db.pages.New = func() any { b := make([]byte, db.psize); return &b }
	if err := db.walk(); err != nil {
		return nil, err
	}
	return db, nil
}

func (db *DB) errorf(format string, args ...any) error {
	return formats.Malformedf("lmdb %s: %s", db.name, fmt.Sprintf(format, args...))
}

// readMetas reads both meta pages and returns the newer one that is well formed.
// Meta page 0 gives the page size, which places meta page 1. A meta page that fails
// its header checks (a torn write) is passed over for the other; the chosen one must
// then describe a tree that fits the file.
func (db *DB) readMetas() (meta, error) {
	var buf [pageHeader + metaSize]byte
	if db.size < int64(len(buf)) {
		return meta{}, db.errorf("file of %d bytes is too short for an LMDB meta page (not an LMDB data file, or truncated)", db.size)
	}
	var metas [2]meta
	var errs [2]error
	psize := uint32(0)
	for i := 0; i < 2; i++ {
		off := int64(0)
		if i == 1 {
			if psize == 0 {
				psize = 4096 // meta page 0 unreadable: try the usual page size
			}
			off = int64(psize)
		}
		if off+int64(len(buf)) > db.size {
			errs[i] = fmt.Errorf("at offset %d past the end of the file (%d bytes)", off, db.size)
			continue
		}
		if _, err := formats.ReadFull(db.r, db.size, off, int64(len(buf)), buf[:], "lmdb meta page"); err != nil {
			errs[i] = err
			continue
		}
		metas[i], errs[i] = parseMeta(buf[:], uint64(i))
		if errs[i] == nil && i == 0 {
			psize = metas[0].psize
		}
		if errs[i] == nil && i == 1 && metas[1].psize != psize {
			errs[i] = fmt.Errorf("page size %d, meta page 0 says %d", metas[1].psize, psize)
		}
	}
	var m meta
	switch {
	case errs[0] != nil && errs[1] != nil:
		return meta{}, db.errorf("no valid meta page (not an LMDB data file, or corrupt): meta page 0: %v; meta page 1: %v", errs[0], errs[1])
	case errs[0] != nil:
		m = metas[1]
	case errs[1] != nil:
		m = metas[0]
	case metas[1].txnid > metas[0].txnid:
		m = metas[1]
	default:
		m = metas[0]
	}
	return m, db.checkMeta(m)
}

// parseMeta reads meta page pgno's header checks: magic, version, page size.
func parseMeta(b []byte, pgno uint64) (meta, error) {
	le := binary.LittleEndian
	if got := le.Uint32(b[16:]); got != magic {
		if got == 0xDEC0EFBE {
			return meta{}, errors.New("big-endian LMDB file (not supported)")
		}
		return meta{}, fmt.Errorf("magic %#08x, want %#08x", got, uint32(magic))
	}
	if v := le.Uint32(b[20:]); v != dataVersion {
		return meta{}, fmt.Errorf("data version %d, want %d (LMDB 0.9)", v, dataVersion)
	}
	if fl := le.Uint16(b[10:]); fl&pKind != pMeta {
		return meta{}, fmt.Errorf("page flags %#x, want a meta page", fl)
	}
	if p := le.Uint64(b[0:]); p != pgno {
		return meta{}, fmt.Errorf("page number field %d, want %d", p, pgno)
	}
	m := meta{
		psize:    le.Uint32(b[40:]), // the free database's md_pad holds the page size
		flags:    le.Uint16(b[92:]),
		depth:    le.Uint16(b[94:]),
		branches: le.Uint64(b[96:]),
		leaves:   le.Uint64(b[104:]),
		entries:  le.Uint64(b[120:]),
		root:     le.Uint64(b[128:]),
		lastPg:   le.Uint64(b[136:]),
		txnid:    le.Uint64(b[144:]),
	}
	if m.psize < minPage || m.psize > maxPage || m.psize&(m.psize-1) != 0 {
		return meta{}, fmt.Errorf("page size %d (want a power of two in [%d, %d])", m.psize, minPage, maxPage)
	}
	return m, nil
}

// checkMeta checks the chosen meta page's main database against the file.
func (db *DB) checkMeta(m meta) error {
	if m.flags != 0 {
		return db.errorf("main database flags %#x (DUPSORT, INTEGERKEY or REVERSEKEY databases are not supported; Caffe writes none)", m.flags)
	}
	if m.lastPg < 1 || m.lastPg > uint64(1<<62)/uint64(m.psize) {
		return db.errorf("meta page (txn %d): last page %d is impossible", m.txnid, m.lastPg)
	}
	if need := int64(m.lastPg+1) * int64(m.psize); need > db.size {
		return db.errorf("meta page (txn %d) says the file holds %d pages of %d bytes (%d bytes); it has %d bytes: truncated", m.txnid, m.lastPg+1, m.psize, need, db.size)
	}
	if m.root == invalidPage {
		if m.depth != 0 || m.entries != 0 {
			return db.errorf("meta page (txn %d): empty main database with depth %d and %d entries", m.txnid, m.depth, m.entries)
		}
		return nil
	}
	if m.root < 2 || m.root > m.lastPg {
		return db.errorf("meta page (txn %d): main database root page %d outside [2, last page %d]", m.txnid, m.root, m.lastPg)
	}
	if m.depth < 1 || m.depth > MaxDepth {
		return db.errorf("meta page (txn %d): main database depth %d outside [1, %d]", m.txnid, m.depth, MaxDepth)
	}
	return nil
}

// page is a branch or leaf page read from the file and checked.
type page struct {
	b     []byte
	pgno  uint64
	leaf  bool
	nkeys int
}

// readPage reads tree page pgno into buf and checks its header and node offsets.
func (db *DB) readPage(pgno uint64, buf []byte) (page, error) {
	if pgno < 2 || pgno > db.lastPg {
		return page{}, db.errorf("page number %d outside [2, last page %d]", pgno, db.lastPg)
	}
	off := int64(pgno) * int64(db.psize)
	if off > db.size-int64(db.psize) {
		return page{}, db.errorf("page %d at offset %d runs past the end of the file (%d bytes): truncated", pgno, off, db.size)
	}
	if _, err := formats.ReadFull(db.r, db.size, off, int64(db.psize), buf, "lmdb page"); err != nil {
		return page{}, fmt.Errorf("lmdb %s: page %d: %w", db.name, pgno, err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(buf); got != pgno {
		return page{}, db.errorf("page %d: header says page %d", pgno, got)
	}
	p := page{b: buf, pgno: pgno}
	switch fl := le.Uint16(buf[10:]) & pKind; fl {
	case pBranch:
	case pLeaf:
		p.leaf = true
	case pLeaf | pLeaf2, pLeaf | pSubPage:
		return page{}, db.errorf("page %d: dupsort page (flags %#x; not supported)", pgno, fl)
	default:
		return page{}, db.errorf("page %d: flags %#x, want a branch or leaf page", pgno, fl)
	}
	lower, upper := int(le.Uint16(buf[12:])), int(le.Uint16(buf[14:]))
	if lower < pageHeader || lower&1 != 0 || lower > upper || upper > db.psize {
		return page{}, db.errorf("page %d: free space bounds [%d, %d] impossible in a %d-byte page", pgno, lower, upper, db.psize)
	}
	p.nkeys = (lower - pageHeader) / 2
	if p.nkeys == 0 {
		return page{}, db.errorf("page %d: no nodes", pgno)
	}
	for i := 0; i < p.nkeys; i++ {
		o := int(le.Uint16(buf[pageHeader+2*i:]))
		if o < upper || o > db.psize-nodeHeader {
			return page{}, db.errorf("page %d: node %d at offset %d outside [%d, %d]", pgno, i, o, upper, db.psize-nodeHeader)
		}
		if o+nodeHeader+int(le.Uint16(buf[o+6:])) > db.psize {
			return page{}, db.errorf("page %d: node %d key of %d bytes runs past the page", pgno, i, le.Uint16(buf[o+6:]))
		}
	}
	return p, nil
}

// node returns node i's offset, key, flags and its data-size or child-page field.
func (p page) node(i int) (off int, key []byte, flags uint16, lohi uint64) {
	le := binary.LittleEndian
	off = int(le.Uint16(p.b[pageHeader+2*i:]))
	ks := int(le.Uint16(p.b[off+6:]))
	flags = le.Uint16(p.b[off+4:])
	lohi = uint64(le.Uint16(p.b[off:])) | uint64(le.Uint16(p.b[off+2:]))<<16
	return off, p.b[off+nodeHeader : off+nodeHeader+ks], flags, lohi
}

// child returns the page branch node i points to.
func (db *DB) child(p page, i int) (uint64, error) {
	_, _, flags, lohi := p.node(i)
	c := lohi | uint64(flags)<<32
	if c < 2 || c > db.lastPg || c == p.pgno {
		return 0, db.errorf("page %d: branch node %d points to page %d, outside [2, last page %d]", p.pgno, i, c, db.lastPg)
	}
	return c, nil
}

// leafValue checks leaf node i and returns its size and either the inline value or
// the first overflow page.
func (db *DB) leafValue(p page, i int) (key, inline []byte, size uint64, overflow uint64, err error) {
	off, key, flags, size := p.node(i)
	start := off + nodeHeader + len(key)
	switch {
	case flags&nodeSubData != 0:
		return nil, nil, 0, 0, db.errorf("page %d: key %s is a named sub-database (not supported)", p.pgno, kq(key))
	case flags&nodeDupData != 0:
		return nil, nil, 0, 0, db.errorf("page %d: key %s holds duplicates (DUPSORT, not supported)", p.pgno, kq(key))
	case flags&nodeBig != 0:
		if start+8 > db.psize {
			return nil, nil, 0, 0, db.errorf("page %d: key %s: overflow page number runs past the page", p.pgno, kq(key))
		}
		ov := binary.LittleEndian.Uint64(p.b[start:])
		if ov < 2 || ov > db.lastPg {
			return nil, nil, 0, 0, db.errorf("page %d: key %s: overflow page %d outside [2, last page %d]", p.pgno, kq(key), ov, db.lastPg)
		}
		return key, nil, size, ov, nil
	case flags != 0:
		return nil, nil, 0, 0, db.errorf("page %d: key %s: node flags %#x", p.pgno, kq(key), flags)
	}
	if uint64(start)+size > uint64(db.psize) {
		return nil, nil, 0, 0, db.errorf("page %d: key %s: value of %d bytes runs past the page", p.pgno, kq(key), size)
	}
	return key, p.b[start : start+int(size)], size, 0, nil
}

// walk visits the whole tree depth first, in key order, checking that every page is
// reached once, at the depth the meta page gives, that keys ascend strictly, and that
// the counts agree with the meta page; it records every key's location.
func (db *DB) walk() error {
	m := db.meta
	if m.root == invalidPage {
		return nil
	}
	type frame struct {
		p    page
		next int
	}
	seen := map[uint64]bool{}
	var branches, leaves uint64
	var stack []frame
	var last []byte
	scratch := make([]byte, db.psize) // leaves are done with at once; branches are kept
	visit := func(pgno uint64) error {
		if seen[pgno] {
			return db.errorf("page %d is reached twice (a cycle or a shared page)", pgno)
		}
		seen[pgno] = true
		p, err := db.readPage(pgno, scratch)
		if err != nil {
			return err
		}
		level := len(stack) + 1
		if p.leaf != (level == int(m.depth)) {
			return db.errorf("page %d: a %s at level %d of a tree of depth %d", pgno, map[bool]string{true: "leaf", false: "branch"}[p.leaf], level, m.depth)
		}
		if !p.leaf {
			branches++
			p.b = append([]byte(nil), p.b...)
			stack = append(stack, frame{p: p})
			return nil
		}
		leaves++
		for i := 0; i < p.nkeys; i++ {
			key, _, _, _, err := db.leafValue(p, i)
			if err != nil {
				return err
			}
			if len(db.recs) > 0 && bytes.Compare(key, last) <= 0 {
				return db.errorf("page %d: key %s does not follow %s (keys out of order)", pgno, kq(key), kq(last))
			}
			k := append([]byte(nil), key...)
			db.recs = append(db.recs, Record{Key: k, Page: pgno, Index: i})
			last = k
		}
		return nil
	}
	if err := visit(m.root); err != nil {
		return err
	}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == top.p.nkeys {
			stack = stack[:len(stack)-1]
			continue
		}
		c, err := db.child(top.p, top.next)
		if err != nil {
			return err
		}
		top.next++
		if err := visit(c); err != nil {
			return err
		}
	}
	if uint64(len(db.recs)) != m.entries || branches != m.branches || leaves != m.leaves {
		return db.errorf("tree holds %d entries on %d branch and %d leaf pages; the meta page (txn %d) says %d, %d and %d",
			len(db.recs), branches, leaves, m.txnid, m.entries, m.branches, m.leaves)
	}
	return nil
}

// Records returns every record, in the database's (sorted) key order. The slice is
// shared: callers must not modify it.
func (db *DB) Records() []Record { return db.recs }

// Keys returns every key, in the database's (sorted) order.
func (db *DB) Keys() [][]byte {
	keys := make([][]byte, len(db.recs))
	for i, r := range db.recs {
		keys[i] = r.Key
	}
	return keys
}

// Get copies the value of key into buf (grown when too small) and returns it. A value
// larger than max bytes (max > 0) is refused before it is read.
func (db *DB) Get(key, buf []byte, max int64) ([]byte, error) {
	i := sort.Search(len(db.recs), func(i int) bool { return bytes.Compare(db.recs[i].Key, key) >= 0 })
	if i == len(db.recs) || !bytes.Equal(db.recs[i].Key, key) {
		return nil, fmt.Errorf("lmdb %s: key %s: %w", db.name, kq(key), ErrNotFound)
	}
	return db.Read(db.recs[i], buf, max)
}

// Read copies the value of rec into buf (grown when too small) and returns it. A value
// larger than max bytes (max > 0) is refused before it is read, and so is one whose
// overflow pages do not fit the file.
func (db *DB) Read(rec Record, buf []byte, max int64) ([]byte, error) {
	if db.r == nil {
		return nil, fmt.Errorf("lmdb %s: database closed", db.name)
	}
	pb := db.pages.Get().(*[]byte)
	defer db.pages.Put(pb)
	p, err := db.readPage(rec.Page, *pb)
	if err != nil {
		return nil, err
	}
	if !p.leaf || rec.Index >= p.nkeys {
		return nil, db.errorf("page %d: no leaf node %d for key %s (file changed since it was opened?)", rec.Page, rec.Index, kq(rec.Key))
	}
	key, inline, size, ov, err := db.leafValue(p, rec.Index)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(key, rec.Key) {
		return nil, db.errorf("page %d: node %d holds key %s, not %s (file changed since it was opened?)", rec.Page, rec.Index, kq(key), kq(rec.Key))
	}
	if max > 0 && size > uint64(max) {
		return nil, db.errorf("key %s: value of %d bytes, more than max_file_bytes=%d", kq(key), size, max)
	}
	if inline != nil {
		return append(buf[:0], inline...), nil
	}
	off, err := db.overflow(key, ov, size)
	if err != nil {
		return nil, err
	}
	v, err := formats.ReadFull(db.r, db.size, off, int64(size), buf, "lmdb value")
	if err != nil {
		return nil, fmt.Errorf("lmdb %s: key %s: %w", db.name, kq(key), err)
	}
	return v, nil
}

// overflow checks the run of overflow pages starting at pgno that holds a value of
// size bytes, and returns the value's offset in the file.
func (db *DB) overflow(key []byte, pgno, size uint64) (int64, error) {
	off := int64(pgno) * int64(db.psize)
	if off > db.size-int64(db.psize) {
		return 0, db.errorf("key %s: overflow page %d at offset %d runs past the end of the file (%d bytes): truncated", kq(key), pgno, off, db.size)
	}
	var hdr [pageHeader]byte
	if _, err := formats.ReadFull(db.r, db.size, off, pageHeader, hdr[:], "lmdb overflow page"); err != nil {
		return 0, fmt.Errorf("lmdb %s: key %s: %w", db.name, kq(key), err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(hdr[:]); got != pgno {
		return 0, db.errorf("key %s: overflow page %d: header says page %d", kq(key), pgno, got)
	}
	if fl := le.Uint16(hdr[10:]) & pKind; fl != pOverflow {
		return 0, db.errorf("key %s: page %d: flags %#x, want an overflow page", kq(key), pgno, fl)
	}
	n := uint64(le.Uint32(hdr[12:]))
	if n < 1 || n > db.lastPg-pgno+1 {
		return 0, db.errorf("key %s: run of %d overflow pages from page %d passes the last page %d", kq(key), n, pgno, db.lastPg)
	}
	if size > n*uint64(db.psize)-pageHeader {
		return 0, db.errorf("key %s: value of %d bytes does not fit its %d overflow pages", kq(key), size, n)
	}
	if end := off + pageHeader + int64(size); end > db.size {
		return 0, db.errorf("key %s: value of %d bytes at offset %d runs past the end of the file (%d bytes): truncated", kq(key), size, off+pageHeader, db.size)
	}
	return off + pageHeader, nil
}

// Close releases the file.
func (db *DB) Close() {
	if db.f != nil {
		db.f.Close()
		db.f = nil
	}
	db.r = nil
}

// kq quotes a key for an error message, cut short when long.
func kq(key []byte) string {
	if len(key) > 48 {
		return fmt.Sprintf("%q... (%d bytes)", key[:48], len(key))
	}
	return fmt.Sprintf("%q", key)
}
