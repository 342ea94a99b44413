package maintenance

import (
	"cmp"
	"maps"
	"slices"
)

// File is what the compaction picker needs of a data file.
type File interface {
	// Level is the file's LSM level: 0 for files flushed by writers, one
	// sorted run each; the files of a level >= 1 form one run.
	Level() int
	Size() int64
	// MaxSeq is the file's largest sequence number: it orders level-0 runs.
	MaxSeq() int64
}

// Run is a sorted run of a bucket: a level-0 file, or all files of one
// level >= 1.
type Run[F any] struct {
	Level int
	Files []F
	Size  int64 // of all its files
}

// SortedRuns orders a bucket's files into runs, newest first: level-0
// files by descending MaxSeq, then levels 1, 2, ...
func SortedRuns[F File](files []F) []Run[F] {
	var runs []Run[F]
	levels := map[int]*Run[F]{}
	maxSeq := func(r Run[F]) int64 { return r.Files[0].MaxSeq() }
	for _, f := range files {
		if f.Level() == 0 {
			runs = append(runs, Run[F]{Files: []F{f}, Size: f.Size()})
			continue
		}
		r := levels[f.Level()]
		if r == nil {
			r = &Run[F]{Level: f.Level()}
			levels[f.Level()] = r
		}
		r.Files = append(r.Files, f)
		r.Size += f.Size()
	}
	slices.SortFunc(runs, func(a, b Run[F]) int { return -cmp.Compare(maxSeq(a), maxSeq(b)) })
	for _, l := range slices.Sorted(maps.Keys(levels)) {
		runs = append(runs, *levels[l])
	}
	return runs
}

// Unit is one compaction: its files are merged into OutputLevel.
type Unit[F any] struct {
	Files       []F
	OutputLevel int
	// DropDeletes: the unit holds every run of the bucket, so no older
	// version remains for a delete to hide and deletes can go.
	DropDeletes bool
}

// Universal configures the universal picker with the table's options.
type Universal struct {
	// Trigger is num-sorted-run.compaction-trigger: fewer runs are left
	// alone. Levels are 0 to Trigger.
	Trigger int
	// MaxSizeAmp is compaction.max-size-amplification-percent.
	MaxSizeAmp int
	// SizeRatio is compaction.size-ratio, a percentage.
	SizeRatio int
}

// PickUniversal chooses runs to compact like RocksDB's universal
// compaction (Paimon's UniversalCompaction): size amplification, then size
// ratio, then run count. runs are newest first, as SortedRuns orders them;
// nil means nothing to do. A unit takes the newest two runs or more and
// writes them to a level above 0 that is at least each of their levels and
// below each level left, so newer versions stay in lower levels.
func PickUniversal[F any](o Universal, runs []Run[F]) *Unit[F] {
	maxLevel := o.Trigger
	n := len(runs)
	if n < o.Trigger {
		return nil
	}
	// 1. Size amplification: everything but the oldest run vs the oldest.
	var younger int64
	for _, r := range runs[:n-1] {
		younger += r.Size
	}
	if younger*100 > int64(o.MaxSizeAmp)*runs[n-1].Size {
		return makeUnit(runs, n, maxLevel)
	}
	// 2. Size ratio, then 3. run count.
	if u := pickSizeRatio(o, runs, 1, false, maxLevel); u != nil {
		return u
	}
	if n > o.Trigger {
		return pickSizeRatio(o, runs, n-o.Trigger+1, true, maxLevel)
	}
	return nil
}

// PickFirstRow picks for a first-row table, whose runs above level 0
// Paimon's readers read without merging (they skip level 0): a key must
// be in one of them at most. While level 0 holds a run, every run of the
// bucket is merged into the last level, where the oldest version of each
// key is kept; nil when level 0 is empty. (Paimon's writers compact only
// level 0, dropping the keys the levels above hold by looking them up;
// merging the whole bucket keeps the same invariant at a higher write
// cost.)
func PickFirstRow[F any](o Universal, runs []Run[F]) *Unit[F] {
	if len(runs) == 0 || runs[0].Level != 0 {
		return nil
	}
	return makeUnit(runs, len(runs), o.Trigger)
}

func pickSizeRatio[F any](o Universal, runs []Run[F], count int, force bool, maxLevel int) *Unit[F] {
	var size int64
	for _, r := range runs[:count] {
		size += r.Size
	}
	for ; count < len(runs); count++ {
		if size*int64(100+o.SizeRatio)/100 < runs[count].Size {
			break
		}
		size += runs[count].Size
	}
	if force || count > 1 {
		return makeUnit(runs, count, maxLevel)
	}
	return nil
}

// makeUnit compacts the newest count runs into the level just above the
// next older run (never level 0), or the last level when all are taken.
func makeUnit[F any](runs []Run[F], count, maxLevel int) *Unit[F] {
	out := maxLevel
	if count < len(runs) {
		out = max(0, runs[count].Level-1)
		for out == 0 && count < len(runs) {
			next := runs[count]
			count++
			if next.Level != 0 {
				out = next.Level
			}
		}
		if count == len(runs) {
			out = maxLevel
		}
	}
	u := &Unit[F]{OutputLevel: out, DropDeletes: count == len(runs)}
	for _, r := range runs[:count] {
		u.Files = append(u.Files, r.Files...)
	}
	return u
}

// appendMaxFileNum is Paimon's compaction.max.file-num default: this many
// small files are merged even while they stay below the target size.
const appendMaxFileNum = 50

// PickAppend picks small files (below half of targetFileSize) of an
// append-table bucket to merge, as Paimon's bucketed append compaction does:
// a window of consecutive small files (by MaxSeq) that together reach
// targetFileSize with at least minFileNum of them (the one that ends
// first, and of those ending there the shortest), or else the first
// max(minFileNum, appendMaxFileNum) small files of the lowest level that
// has as many. With full, all small files once there are two. The output's
// level is one above its inputs' highest.
//
// Waiting for the target size keeps a merged file from being merged again
// with each few new files (that rewrote the growing file every minFileNum
// commits: quadratic in the bucket's size): a window's output rolls at the
// target size, so at most its tail, below half the target, is small again.
// The file-count limit merges files of one level only, so the output of
// such a merge (level L+1, still small when the files are far below the
// target) waits for appendMaxFileNum others of its level instead of being
// merged again with the next appendMaxFileNum-1 new files, which rewrote
// the bucket every 49 commits while its files stayed below the target
// (at 100 commits of 400 KB, 1.5 times the bytes appended). Each merge
// then lifts bytes one level, and a level holds appendMaxFileNum times
// the bytes of the one below: compaction writes about
// log_appendMaxFileNum(target / file size) + 1 times the bytes appended.
func PickAppend[F File](files []F, targetFileSize int64, minFileNum int, full bool) *Unit[F] {
	var small []F
	for _, f := range files {
		if f.Size() < targetFileSize/2 {
			small = append(small, f)
		}
	}
	unit := func(files []F) *Unit[F] {
		top := 0
		for _, f := range files {
			top = max(top, f.Level())
		}
		return &Unit[F]{Files: files, OutputLevel: top + 1}
	}
	if full {
		if len(small) < 2 {
			return nil
		}
		return unit(small)
	}
	slices.SortStableFunc(small, func(a, b F) int { return cmp.Compare(a.MaxSeq(), b.MaxSeq()) })
	for hi := range small {
		var size int64
		for lo := hi; lo >= 0; lo-- {
			if size += small[lo].Size(); size >= targetFileSize && hi-lo+1 >= minFileNum {
				return unit(small[lo : hi+1])
			}
		}
	}
	// Files of one level need not be adjacent: append files all have
	// sequence number 0, so outputs sit among the files they came before.
	maxFileNum := max(minFileNum, appendMaxFileNum)
	byLevel := map[int][]F{}
	for _, f := range small {
		byLevel[f.Level()] = append(byLevel[f.Level()], f)
	}
	for _, l := range slices.Sorted(maps.Keys(byLevel)) {
		if fs := byLevel[l]; len(fs) >= maxFileNum {
			return unit(fs[:maxFileNum])
		}
	}
	return nil
}
