package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// The verifier reads bbolt's file format itself, because bbolt trusts its
// pages: its tree walk recurses through a branch page whose child is
// itself until the stack overflows, follows an overflow count of
// 0xFFFFFFFF into a hang, and sizes an allocation by a free list's count.
// None of those can be recovered from. So before any command reads a
// workspace, verifyPages walks the page tree with bounds: every page id
// and overflow count against the high-water mark and the file's size,
// every element count and key or value against its page, a visited set
// (no page reached twice, none both free and in use), a depth limit, and
// both meta pages' checksums. It reads page headers and element tables
// only (never the values they point to, bar nested buckets' headers), so
// its cost grows with the number of pages, not with the bytes stored.

// bbolt's on-disk layout (go.etcd.io/bbolt/internal/common).
const (
	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	elementSize    = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	bucketHeader   = 16 // root pgid u64, sequence u64

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	leafBucket   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	metaSumLen  = 56 // the meta's bytes before its checksum
	noFreelist  = ^uint64(0)

	// maxTreeDepth bounds a B+tree's height (a sound tree of a billion
	// keys is under 10 deep) and maxBucketDepth the nesting of buckets
	// (whale nests 3 deep).
	maxTreeDepth   = 64
	maxBucketDepth = 16
	// maxPageProblems is how many problems one verification lists.
	maxPageProblems = 20
)

// PageProblem is one structural fault in the page tree.
type PageProblem struct {
	// Bucket is the path of the bucket whose tree holds the fault (nil for
	// the root bucket or a meta or freelist page).
	Bucket []string
	What   string
	// fallback: a damaged meta page whose twin is sound, which bbolt
	// opens by quietly using the older transaction; the tree is walked
	// from the sound one.
	fallback bool
}

func (p PageProblem) String() string {
	if len(p.Bucket) == 0 {
		return p.What
	}
	return "bucket " + strings.Join(p.Bucket, "/") + ": " + p.What
}

type meta struct {
	pageSize  uint32
	root      uint64
	freelist  uint64
	hwm       uint64 // the high-water mark: pages [0, hwm) are in the file's use
	txid      uint64
	valid     bool
	invalidBy string
}

// readMeta parses the meta page at index i of a file whose pages are ps
// bytes.
func readMeta(r io.ReaderAt, i int, ps int64) meta {
	b := make([]byte, pageHeaderSize+64)
	if _, err := r.ReadAt(b, int64(i)*ps); err != nil {
		return meta{invalidBy: fmt.Sprintf("cannot be read: %v", err)}
	}
	m := b[pageHeaderSize:]
	mt := meta{pageSize: binary.LittleEndian.Uint32(m[8:]), root: binary.LittleEndian.Uint64(m[16:]),
		freelist: binary.LittleEndian.Uint64(m[32:]), hwm: binary.LittleEndian.Uint64(m[40:]), txid: binary.LittleEndian.Uint64(m[48:])}
	h := fnv.New64a()
	h.Write(m[:metaSumLen])
	switch {
	case binary.LittleEndian.Uint32(m) != boltMagic:
		mt.invalidBy = "its magic number is wrong"
	case binary.LittleEndian.Uint32(m[4:]) != boltVersion:
		mt.invalidBy = fmt.Sprintf("its format version is %d, want %d", binary.LittleEndian.Uint32(m[4:]), boltVersion)
	case binary.LittleEndian.Uint64(m[metaSumLen:]) != h.Sum64():
		mt.invalidBy = "its checksum does not match"
	case binary.LittleEndian.Uint16(b[8:]) != flagMeta:
		mt.invalidBy = fmt.Sprintf("its page type is %#x, want meta", binary.LittleEndian.Uint16(b[8:]))
	default:
		mt.valid = true
	}
	return mt
}

// verifier walks one file's page tree.
type verifier struct {
	r        io.ReaderAt
	size     int64
	ps       int64
	hwm      uint64
	page     []byte   // the page being read (reused)
	used     []uint64 // bitset of pages reached (overflow pages included)
	free     []uint64 // bitset of pages on the free list
	problems []PageProblem
}

func bitGet(s []uint64, i uint64) bool { return s[i/64]&(1<<(i%64)) != 0 }
func bitSet(s []uint64, i uint64)      { s[i/64] |= 1 << (i % 64) }

func (v *verifier) bad(bucket []string, format string, args ...any) {
	if len(v.problems) < maxPageProblems {
		v.problems = append(v.problems, PageProblem{Bucket: append([]string(nil), bucket...), What: fmt.Sprintf(format, args...)})
	}
}

// verifyPages checks the file at path (see the comment at the top of this
// file). full false checks the meta pages and the free list only: what
// bbolt reads while opening a file.
func verifyPages(path string, full bool) (probs []PageProblem, err error) {
	// A mapped file cut short under us faults instead of failing a read.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			probs, err = nil, fmt.Errorf("store: read the pages of %s: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if b, unmap, ok := mapFile(f, fi.Size()); ok {
		defer unmap()
		return verifyReader(bytes.NewReader(b), fi.Size(), full), nil
	}
	return verifyReader(f, fi.Size(), full), nil
}

func verifyReader(r io.ReaderAt, size int64, full bool) []PageProblem {
	if size == 0 {
		return nil // a new file: bbolt initialises it
	}
	v := &verifier{r: r, size: size}
	// Meta page 0 says the page size; if it cannot, bbolt assumes the
	// system's (4096 on the systems whale runs on).
	ps := int64(4096)
	m0 := readMeta(r, 0, ps)
	if m0.valid && validPageSize(m0.pageSize) {
		ps = int64(m0.pageSize)
	}
	if size < 2*ps {
		v.bad(nil, "the file has %d bytes, less than its two meta pages of %d", size, ps)
		return v.problems
	}
	m0 = readMeta(r, 0, ps)
	m1 := readMeta(r, 1, ps)
	for i, m := range []meta{m0, m1} {
		if !m.valid {
			other := "the other meta page is damaged too"
			if (i == 0 && m1.valid) || (i == 1 && m0.valid) {
				other = "bbolt would quietly fall back on the other one, an older transaction"
			}
			v.bad(nil, "meta page %d is damaged (%s): %s", i, m.invalidBy, other)
			v.problems[len(v.problems)-1].fallback = m0.valid || m1.valid
		}
	}
	cur := m0
	if !m0.valid || (m1.valid && m1.txid > m0.txid) {
		cur = m1
	}
	if !cur.valid {
		return v.problems
	}
	switch {
	case !validPageSize(cur.pageSize) || int64(cur.pageSize) != ps:
		v.bad(nil, "the meta page's page size is %d", cur.pageSize)
		return v.problems
	case cur.hwm < 3 || cur.hwm > uint64(size/ps):
		v.bad(nil, "the meta page says the file has %d pages; it has room for %d", cur.hwm, size/ps)
		return v.problems
	case cur.root < 2 || cur.root >= cur.hwm:
		v.bad(nil, "the root bucket's page %d is outside pages 2..%d", cur.root, cur.hwm-1)
		return v.problems
	}
	v.ps, v.hwm = ps, cur.hwm
	v.used = make([]uint64, (v.hwm+63)/64)
	v.free = make([]uint64, (v.hwm+63)/64)
	v.mark(nil, 0, 0)
	v.mark(nil, 1, 0)
	if cur.freelist != noFreelist {
		v.freelist(cur.freelist)
	}
	if full && len(v.problems) == 0 {
		v.tree(nil, cur.root, 0, 0)
	}
	return v.problems
}

func validPageSize(ps uint32) bool { return ps >= 512 && ps <= 1<<20 && ps&(ps-1) == 0 }

// mark records pages id..id+overflow as reached, reporting a page
// reached twice or both free and in use.
func (v *verifier) mark(bucket []string, id uint64, overflow uint32) bool {
	for p := id; p <= id+uint64(overflow); p++ {
		if bitGet(v.used, p) {
			v.bad(bucket, "page %d is reached twice (a cycle, or two parents)", p)
			return false
		}
		if bitGet(v.free, p) {
			v.bad(bucket, "page %d is in use and on the free list", p)
			return false
		}
		bitSet(v.used, p)
	}
	return true
}

// header reads the header of page id and checks its id and overflow
// against the file.
func (v *verifier) header(bucket []string, id uint64, what string) (flags uint16, count int, overflow uint32, ok bool) {
	if id < 2 || id >= v.hwm {
		v.bad(bucket, "%s page %d is outside pages 2..%d", what, id, v.hwm-1)
		return 0, 0, 0, false
	}
	// One read of the whole first page: its header and, on all but the
	// fullest pages, its element table.
	if v.page == nil {
		v.page = make([]byte, v.ps)
	}
	if _, err := v.r.ReadAt(v.page, int64(id)*v.ps); err != nil {
		v.bad(bucket, "%s page %d cannot be read: %v", what, id, err)
		return 0, 0, 0, false
	}
	h := v.page
	if self := binary.LittleEndian.Uint64(h[:]); self != id {
		v.bad(bucket, "%s page %d calls itself page %d", what, id, self)
		return 0, 0, 0, false
	}
	flags, count, overflow = binary.LittleEndian.Uint16(h[8:]), int(binary.LittleEndian.Uint16(h[10:])), binary.LittleEndian.Uint32(h[12:])
	if id+uint64(overflow) >= v.hwm {
		v.bad(bucket, "%s page %d has %d overflow pages, past the file's %d pages", what, id, overflow, v.hwm)
		return 0, 0, 0, false
	}
	return flags, count, overflow, true
}

// freelist checks the free list page and records the pages it frees.
func (v *verifier) freelist(id uint64) {
	flags, count, overflow, ok := v.header(nil, id, "the free list's")
	if !ok {
		return
	}
	if flags != flagFreelist {
		v.bad(nil, "the free list's page %d has type %#x", id, flags)
		return
	}
	if !v.mark(nil, id, overflow) {
		return
	}
	span := (int64(overflow) + 1) * v.ps
	off := int64(pageHeaderSize)
	n := int64(count)
	if count == 0xFFFF { // the count did not fit: it is the first id
		var b [8]byte
		if _, err := v.r.ReadAt(b[:], int64(id)*v.ps+off); err != nil {
			v.bad(nil, "the free list's page %d cannot be read: %v", id, err)
			return
		}
		c := binary.LittleEndian.Uint64(b[:])
		if c > uint64(span) {
			v.bad(nil, "the free list's page %d counts %d free pages, more than it can hold", id, c)
			return
		}
		n, off = int64(c), off+8
	}
	if off+n*8 > span {
		v.bad(nil, "the free list's page %d counts %d free pages, more than its %d bytes hold", id, n, span)
		return
	}
	ids := make([]byte, n*8)
	if _, err := v.r.ReadAt(ids, int64(id)*v.ps+off); err != nil {
		v.bad(nil, "the free list's page %d cannot be read: %v", id, err)
		return
	}
	for i := int64(0); i < n; i++ {
		p := binary.LittleEndian.Uint64(ids[i*8:])
		if p < 2 || p >= v.hwm {
			v.bad(nil, "the free list frees page %d, outside pages 2..%d", p, v.hwm-1)
			return
		}
		if bitGet(v.used, p) {
			v.bad(nil, "the free list frees page %d, which is in use", p)
			return
		}
		bitSet(v.free, p)
	}
}

// tree walks the B+tree whose root is page id, in the bucket at path;
// depth is the page's depth in its tree, nest the bucket's nesting.
func (v *verifier) tree(path []string, id uint64, depth, nest int) {
	if len(v.problems) >= maxPageProblems {
		return
	}
	if depth > maxTreeDepth {
		v.bad(path, "page %d is %d levels deep, past any sound tree's height", id, depth)
		return
	}
	flags, count, overflow, ok := v.header(path, id, "a")
	if !ok {
		return
	}
	if flags != flagBranch && flags != flagLeaf {
		v.bad(path, "page %d has type %#x where a branch or leaf page belongs", id, flags)
		return
	}
	if !v.mark(path, id, overflow) {
		return
	}
	span := (int64(overflow) + 1) * v.ps
	if int64(pageHeaderSize+count*elementSize) > span {
		v.bad(path, "page %d counts %d elements, more than its %d bytes hold", id, count, span)
		return
	}
	if flags == flagBranch && count == 0 {
		v.bad(path, "branch page %d has no elements", id)
		return
	}
	base := int64(id) * v.ps
	elems := make([]byte, count*elementSize)
	if n := copy(elems, v.page[pageHeaderSize:]); n < len(elems) {
		if _, err := v.r.ReadAt(elems[n:], base+pageHeaderSize+int64(n)); err != nil {
			v.bad(path, "page %d cannot be read: %v", id, err)
			return
		}
	}
	if flags == flagBranch {
		for i := range count {
			e := elems[i*elementSize:]
			pos, ksize, child := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint64(e[8:])
			if at := int64(pageHeaderSize+i*elementSize) + int64(pos); at+int64(ksize) > span {
				v.bad(path, "branch page %d element %d: its key runs past the page", id, i)
				return
			}
			v.tree(path, child, depth+1, nest)
		}
		return
	}
	v.leaf(path, elems, count, span, func(at, n int64) ([]byte, error) {
		b := make([]byte, n)
		_, err := v.r.ReadAt(b, base+at)
		return b, err
	}, fmt.Sprintf("leaf page %d", id), nest)
}

// leaf checks the elements of a leaf page (on file, or inline in a
// bucket's value) and walks the buckets they hold; read returns n bytes
// at offset at of the page.
func (v *verifier) leaf(path []string, elems []byte, count int, span int64, read func(at, n int64) ([]byte, error), what string, nest int) {
	for i := range count {
		e := elems[i*elementSize:]
		flags, pos, ksize, vsize := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
		at := int64(pageHeaderSize+i*elementSize) + int64(pos)
		if at+int64(ksize)+int64(vsize) > span {
			v.bad(path, "%s element %d: its key and value run past the page", what, i)
			return
		}
		if flags&^leafBucket != 0 {
			v.bad(path, "%s element %d has flags %#x", what, i, flags)
			return
		}
		if flags&leafBucket == 0 {
			continue
		}
		if nest+1 > maxBucketDepth {
			v.bad(path, "%s element %d: buckets nested %d deep", what, i, nest+1)
			return
		}
		if vsize < bucketHeader {
			v.bad(path, "%s element %d: a bucket whose header has %d bytes, want %d", what, i, vsize, bucketHeader)
			return
		}
		kv, err := read(at, int64(ksize)+int64(vsize))
		if err != nil {
			v.bad(path, "%s element %d cannot be read: %v", what, i, err)
			return
		}
		sub := append(append([]string(nil), path...), string(kv[:ksize]))
		val := kv[ksize:]
		if root := binary.LittleEndian.Uint64(val); root != 0 {
			v.tree(sub, root, 0, nest+1)
			continue
		}
		v.inline(sub, val[bucketHeader:], nest+1)
	}
}

// inline checks a bucket stored inline: a leaf page inside its value.
func (v *verifier) inline(path []string, page []byte, nest int) {
	if len(page) < pageHeaderSize {
		v.bad(path, "an inline bucket of %d bytes, shorter than a page header", len(page))
		return
	}
	flags, count := binary.LittleEndian.Uint16(page[8:]), int(binary.LittleEndian.Uint16(page[10:]))
	if flags != flagLeaf {
		v.bad(path, "an inline bucket's page has type %#x, want leaf", flags)
		return
	}
	span := int64(len(page))
	if int64(pageHeaderSize+count*elementSize) > span {
		v.bad(path, "an inline bucket counts %d elements, more than its %d bytes hold", count, span)
		return
	}
	v.leaf(path, page[pageHeaderSize:], count, span, func(at, n int64) ([]byte, error) {
		if at+n > span {
			return nil, errors.New("past the inline page")
		}
		return page[at : at+n], nil
	}, "an inline bucket's page", nest)
}
