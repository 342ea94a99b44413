package objfs

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
)

// BlockSize is the unit the Cache fetches and keeps: a read of a few
// bytes (a Parquet footer) fetches its block, a read of a column chunk
// fetches the blocks it spans in one ranged GET.
const BlockSize = 1 << 20

// Cache keeps blocks of objects in files under a local directory, least
// recently used evicted past a byte budget. Blocks are keyed by the
// object's key and ETag, so a replaced object never reads stale bytes.
// It is safe for concurrent use.
type Cache struct {
	dir    string
	budget int64

	mu      sync.Mutex
	lru     *list.List // of *cacheEntry, most recent first
	entries map[string]*list.Element
	used    int64

	hits, misses atomic.Int64
}

type cacheEntry struct {
	name string // file name under dir
	size int64
}

type cacheID struct {
	key, etag string
	size      int64
}

// NewCache returns a cache of at most budget bytes in dir, which it
// creates; blocks a previous process left there are removed (not
// indexed). Nothing else in dir is touched: it may be a directory the
// user keeps other files in.
func NewCache(dir string, budget int64) (*Cache, error) {
	if budget <= 0 {
		return nil, fmt.Errorf("object cache budget %d: must be positive", budget)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("object cache %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("object cache %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() && cacheFileName.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("object cache %s: %w", dir, err)
			}
		}
	}
	return &Cache{dir: dir, budget: budget, lru: list.New(), entries: map[string]*list.Element{}}, nil
}

// tmpPattern names a block being written (os.CreateTemp); cacheFileName
// matches it and blockName's names, the only files the cache removes.
const tmpPattern = ".objcache-*"

var cacheFileName = regexp.MustCompile(`^([0-9a-f]{32}-[0-9]+|\.objcache-[0-9]+)$`)

// CacheStats counts blocks read from the cache and fetched.
type CacheStats struct {
	Hits, Misses int64
	Bytes        int64 // held on disk
}

func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Bytes: c.used}
}

func blockName(id cacheID, block int64) string {
	h := sha256.Sum256([]byte(id.key + "\x00" + id.etag))
	return hex.EncodeToString(h[:16]) + "-" + strconv.FormatInt(block, 10)
}

// read fills p from offset off of object id (p within the object), from
// cached blocks where it can and by fetch, one call per run of missing
// blocks, where it must.
func (c *Cache) read(id cacheID, p []byte, off int64, fetch func(p []byte, off int64) error) error {
	first, last := off/BlockSize, (off+int64(len(p))-1)/BlockSize
	for b := first; b <= last; {
		if c.readBlock(id, b, p, off) {
			c.hits.Add(1)
			b++
			continue
		}
		end := b + 1 // the run of missing blocks from b
		for end <= last && !c.has(blockName(id, end)) {
			end++
		}
		start, stop := b*BlockSize, min(end*BlockSize, id.size)
		buf := make([]byte, stop-start)
		if err := fetch(buf, start); err != nil {
			return err
		}
		c.misses.Add(end - b)
		for i := b; i < end; i++ {
			blk := buf[(i-b)*BlockSize : min((i-b+1)*BlockSize, int64(len(buf)))]
			c.put(blockName(id, i), blk)
			copyBlock(p, off, blk, i*BlockSize)
		}
		b = end
	}
	return nil
}

// copyBlock copies the part of blk (at object offset at) that p (at object
// offset off) covers.
func copyBlock(p []byte, off int64, blk []byte, at int64) {
	lo, hi := max(off, at), min(off+int64(len(p)), at+int64(len(blk)))
	if lo < hi {
		copy(p[lo-off:hi-off], blk[lo-at:hi-at])
	}
}

func (c *Cache) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[name]
	return ok
}

// readBlock copies block b of id into p when it is cached; a block evicted
// meanwhile is a miss.
func (c *Cache) readBlock(id cacheID, b int64, p []byte, off int64) bool {
	name := blockName(id, b)
	c.mu.Lock()
	el, ok := c.entries[name]
	if ok {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return false
	}
	f, err := os.Open(filepath.Join(c.dir, name))
	if err != nil {
		return false
	}
	defer f.Close()
	at := b * BlockSize
	size := min(BlockSize, id.size-at)
	if st, err := f.Stat(); err != nil || st.Size() != size {
		return false
	}
	// Only the part p covers: a footer's few bytes need not read 1 MiB.
	lo, hi := max(off, at), min(off+int64(len(p)), at+size)
	_, err = f.ReadAt(p[lo-off:hi-off], lo-at)
	return err == nil
}

// put stores a block; failing to is only a later miss.
func (c *Cache) put(name string, blk []byte) {
	size := int64(len(blk))
	if size > c.budget {
		return
	}
	tmp, err := os.CreateTemp(c.dir, tmpPattern)
	if err != nil {
		return
	}
	_, err = tmp.Write(blk)
	if err = errors.Join(err, tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(c.dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[name]; ok { // a concurrent read stored it too
		c.lru.MoveToFront(el)
		return
	}
	c.entries[name] = c.lru.PushFront(&cacheEntry{name: name, size: size})
	c.used += size
	for c.used > c.budget {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.entries, e.name)
		c.used -= e.size
		_ = os.Remove(filepath.Join(c.dir, e.name)) // a stray block goes at the next start
	}
}
