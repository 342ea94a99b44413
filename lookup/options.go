package lookup

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/tablestore"
)

// CacheMode is lookup.cache, in Flink's vocabulary.
type CacheMode int8

const (
	// CachePartial caches the rows (and missing keys) lookups read.
	CachePartial CacheMode = iota
	// CacheNone reads every key from the table store.
	CacheNone
	// CacheFull also loads the whole table into the cache when the index
	// opens; rows the bound does not hold are read from the store.
	CacheFull
)

func init() {
	tablestore.RegisterOptions("lookup.", func(k, v string) error {
		var o Options
		return o.set(k, v)
	})
}

// Option keys, as table options or per request.
const (
	OptCache           = "lookup.cache"
	OptMaxRows         = "lookup.partial-cache.max-rows"
	OptMaxBytes        = "lookup.partial-cache.max-bytes"
	OptExpireAfter     = "lookup.partial-cache.expire-after-write"
	OptCacheMissingKey = "lookup.partial-cache.cache-missing-key"
	OptMaxStaleness    = "lookup.max-staleness"
)

// DefaultMaxBytes bounds a table's row cache when neither max-rows nor
// max-bytes is given.
const DefaultMaxBytes = 64 << 20

// Options configure an index's cache.
type Options struct {
	Cache CacheMode
	// MaxRows bounds the cache by rows (cached missing keys count as rows);
	// 0: by MaxBytes.
	MaxRows int64
	// MaxBytes bounds the cache by the estimated bytes of its rows and keys.
	MaxBytes int64
	// ExpireAfterWrite drops a cached row this long after it was read (0:
	// never); commits invalidate changed keys regardless.
	ExpireAfterWrite time.Duration
	// CacheMissingKey caches that a key is absent (the negative cache), so
	// misses cost what hits do.
	CacheMissingKey bool
	// MaxStaleness bounds how old a lookup's snapshot may be: a lookup
	// sees every commit acknowledged (on any node) at least this long
	// before it started. 0: every lookup sees every commit acknowledged
	// before it started, at the cost of reading the table's latest
	// snapshot hint from storage per lookup (shared by concurrent ones).
	MaxStaleness time.Duration
}

// DefaultOptions: a partial cache of DefaultMaxBytes that caches misses.
func DefaultOptions() Options {
	return Options{Cache: CachePartial, MaxBytes: DefaultMaxBytes, CacheMissingKey: true}
}

// ParseOptions applies the lookup.* entries of each map in turn (table
// options, then a request's) to the defaults; other keys are ignored, and
// an unknown lookup.* key or a bad value is an error naming it.
func ParseOptions(maps ...map[string]string) (Options, error) {
	o := DefaultOptions()
	for _, m := range maps {
		for k, v := range m {
			if !strings.HasPrefix(k, "lookup.") {
				continue
			}
			if err := o.set(k, v); err != nil {
				return o, err
			}
		}
	}
	return o, nil
}

func (o *Options) set(k, v string) error {
	bad := func(want string) error {
		return fmt.Errorf("%w: option %s = %q: want %s", tablestore.ErrInvalid, k, v, want)
	}
	switch k {
	case OptCache:
		switch strings.ToUpper(v) {
		case "NONE":
			o.Cache = CacheNone
		case "PARTIAL":
			o.Cache = CachePartial
		case "FULL":
			o.Cache = CacheFull
		default:
			return bad("NONE, PARTIAL or FULL")
		}
	case OptMaxRows, OptMaxBytes:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return bad("a positive integer")
		}
		if k == OptMaxRows {
			o.MaxRows = n
		} else {
			o.MaxBytes = n
		}
	case OptExpireAfter, OptMaxStaleness:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return bad("a duration such as 10s or 5m")
		}
		if k == OptExpireAfter {
			o.ExpireAfterWrite = d
		} else {
			o.MaxStaleness = d
		}
	case OptCacheMissingKey:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad("true or false")
		}
		o.CacheMissingKey = b
	default:
		return fmt.Errorf("%w: unknown lookup option %q (known: %s, %s, %s, %s, %s, %s)", tablestore.ErrInvalid, k, OptCache, OptMaxRows, OptMaxBytes, OptExpireAfter, OptCacheMissingKey, OptMaxStaleness)
	}
	return nil
}
