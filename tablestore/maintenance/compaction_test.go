package maintenance

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type file struct {
	level     int
	size, seq int64
}

func (f *file) Level() int    { return f.level }
func (f *file) Size() int64   { return f.size }
func (f *file) MaxSeq() int64 { return f.seq }

func TestUniversalPicker(t *testing.T) {
	o := Universal{Trigger: 5, MaxSizeAmp: 200, SizeRatio: 1}
	run := func(level int, size int64) Run[*file] {
		return Run[*file]{Level: level, Size: size, Files: []*file{{level: level, size: size}}}
	}
	cases := []struct {
		runs      []Run[*file]
		wantFiles int
		wantLevel int
	}{
		// Fewer runs than the trigger: nothing.
		{[]Run[*file]{run(0, 1), run(0, 1), run(5, 100)}, 0, 0},
		// Size amplification: younger runs exceed 200% of the oldest.
		{[]Run[*file]{run(0, 100), run(0, 100), run(0, 100), run(0, 100), run(5, 10)}, 5, 5},
		// Size ratio: the newest runs are similar in size, the old run is big.
		{[]Run[*file]{run(0, 10), run(0, 10), run(0, 10), run(0, 10), run(5, 1000)}, 4, 4},
		// Run count: sizes grow too fast for the size ratio, 6 runs > trigger 5.
		{[]Run[*file]{run(0, 1), run(0, 3), run(2, 9), run(3, 27), run(4, 81), run(5, 1000)}, 2, 1},
		// Output never lands in level 0: take further level-0 runs up to a leveled one.
		{[]Run[*file]{run(0, 1), run(0, 3), run(0, 9), run(0, 27), run(0, 81), run(5, 1000)}, 6, 5},
	}
	for i, c := range cases {
		u := PickUniversal(o, c.runs)
		switch {
		case c.wantFiles == 0 && u != nil:
			t.Errorf("case %d: want nothing, got %d files", i, len(u.Files))
		case c.wantFiles > 0 && (u == nil || len(u.Files) != c.wantFiles || u.OutputLevel != c.wantLevel):
			t.Errorf("case %d: want %d files to level %d, got %+v", i, c.wantFiles, c.wantLevel, u)
		}
	}
}

// randomBucket is the files of a bucket whose levels 1..maxLevel hold some
// files each and level 0 some flushed files, with distinct sequence numbers.
func randomBucket(rng *rand.Rand, maxLevel int) []*file {
	var files []*file
	seqs := rng.Perm(1000)
	for range rng.IntN(8) {
		files = append(files, &file{size: 1 + rng.Int64N(1000), seq: int64(seqs[len(files)])})
	}
	for l := 1; l <= maxLevel; l++ {
		if rng.IntN(2) == 0 {
			continue
		}
		for range 1 + rng.IntN(3) {
			files = append(files, &file{level: l, size: 1 + rng.Int64N(5000), seq: int64(seqs[len(files)])})
		}
	}
	rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
	return files
}

// TestPickUniversalRandom checks SortedRuns' order and the guarantees of
// PickUniversal's documentation on random buckets and options.
func TestPickUniversalRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	for iter := range 5000 {
		o := Universal{Trigger: 2 + rng.IntN(6), MaxSizeAmp: 50 + rng.IntN(300), SizeRatio: rng.IntN(10)}
		files := randomBucket(rng, o.Trigger)
		runs := SortedRuns(files)

		// Every file once; level-0 runs newest first, then levels ascending.
		var seen []*file
		for i, r := range runs {
			var size int64
			for _, f := range r.Files {
				if f.level != r.Level {
					t.Fatalf("iter %d: file of level %d in run of level %d", iter, f.level, r.Level)
				}
				size += f.size
			}
			if size != r.Size || (r.Level == 0) != (len(r.Files) == 1 && r.Files[0].level == 0) {
				t.Fatalf("iter %d: run %d: %+v", iter, i, r)
			}
			if i > 0 {
				p := runs[i-1]
				if p.Level > r.Level || (p.Level == r.Level && (r.Level != 0 || p.Files[0].seq < r.Files[0].seq)) {
					t.Fatalf("iter %d: run %d (level %d) after run of level %d out of order", iter, i, r.Level, p.Level)
				}
			}
			seen = append(seen, r.Files...)
		}
		if len(seen) != len(files) {
			t.Fatalf("iter %d: %d files in runs, %d in the bucket", iter, len(seen), len(files))
		}

		u := PickUniversal(o, runs)
		if len(runs) < o.Trigger {
			if u != nil {
				t.Fatalf("iter %d: %d runs under trigger %d, picked %d files", iter, len(runs), o.Trigger, len(u.Files))
			}
			continue
		}
		if u == nil {
			if len(runs) > o.Trigger {
				t.Fatalf("iter %d: %d runs over trigger %d, nothing picked", iter, len(runs), o.Trigger)
			}
			continue
		}
		// A prefix of two runs or more, in order.
		taken, n := 0, 0
		for taken < len(runs) && n < len(u.Files) {
			if !slices.Equal(u.Files[n:n+len(runs[taken].Files)], runs[taken].Files) {
				t.Fatalf("iter %d: unit is not the newest runs in order", iter)
			}
			n += len(runs[taken].Files)
			taken++
		}
		if n != len(u.Files) || taken < 2 {
			t.Fatalf("iter %d: unit of %d files is not a prefix of two runs or more (%d runs)", iter, len(u.Files), taken)
		}
		if u.DropDeletes != (taken == len(runs)) {
			t.Fatalf("iter %d: DropDeletes %v with %d of %d runs", iter, u.DropDeletes, taken, len(runs))
		}
		if u.OutputLevel < 1 || u.OutputLevel > o.Trigger {
			t.Fatalf("iter %d: output level %d outside 1..%d", iter, u.OutputLevel, o.Trigger)
		}
		for _, r := range runs[:taken] {
			if r.Level > u.OutputLevel {
				t.Fatalf("iter %d: run of level %d compacted down to level %d", iter, r.Level, u.OutputLevel)
			}
		}
		for _, r := range runs[taken:] {
			if r.Level <= u.OutputLevel {
				t.Fatalf("iter %d: output level %d is not below the remaining level %d", iter, u.OutputLevel, r.Level)
			}
		}
	}
}

// TestPickAppend: small files only; without full, the window of
// consecutive ones (by MaxSeq) reaching the target size with minFileNum
// files that ends first, the shortest ending there, else the first
// file-count limit of small files of the lowest level with as many, and
// none while neither is there; with full, all small files once there are
// two; the output one level above the inputs' highest.
func TestPickAppend(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	for iter := range 2000 {
		target, minNum, full := 100+rng.Int64N(1000), 1+rng.IntN(6), rng.IntN(2) == 0
		var files, small []*file
		for i := range rng.IntN(80) {
			// Mostly small files of any size, in random seq order.
			f := &file{size: rng.Int64N(target / 2), seq: int64(rng.IntN(1000)*100 + i), level: rng.IntN(3) / 2}
			if rng.IntN(8) == 0 {
				f.size = target/2 + rng.Int64N(target)
			}
			files = append(files, f)
			if f.size < target/2 {
				small = append(small, f)
			}
		}
		u := PickAppend(files, target, minNum, full)
		if u != nil {
			top := 0
			for _, f := range u.Files {
				top = max(top, f.level)
			}
			if u.OutputLevel != top+1 {
				t.Fatalf("iter %d: output level %d for inputs up to level %d", iter, u.OutputLevel, top)
			}
		}
		if full {
			want := len(small) >= 2
			if want != (u != nil) || (u != nil && !sameFiles(u.Files, small)) {
				t.Fatalf("iter %d: full with %d small files, got %+v", iter, len(small), u)
			}
			continue
		}
		slices.SortStableFunc(small, func(a, b *file) int { return int(a.seq - b.seq) })
		picks := func(w []*file) bool {
			var size int64
			for _, f := range w {
				size += f.size
			}
			return size >= target && len(w) >= minNum
		}
		// The first window end at which some window reaches the target.
		end := -1
		for hi := 0; hi < len(small) && end < 0; hi++ {
			for lo := 0; lo <= hi; lo++ {
				if picks(small[lo : hi+1]) {
					end = hi
					break
				}
			}
		}
		if end < 0 {
			// Else the first files of the lowest level with enough.
			var want []*file
			for l := 0; l < 2 && want == nil; l++ {
				var of []*file
				for _, f := range small {
					if f.level == l {
						of = append(of, f)
					}
				}
				if n := max(minNum, appendMaxFileNum); len(of) >= n {
					want = of[:n]
				}
			}
			if (u == nil) != (want == nil) || u != nil && !slices.Equal(u.Files, want) {
				t.Fatalf("iter %d: no window of %d small files reaches the target %d (min %d): want %d files of one level, picked %+v", iter, len(small), target, minNum, len(want), u)
			}
			continue
		}
		if u == nil {
			t.Fatalf("iter %d: a window of the %d small files ending at %d qualifies, picked none", iter, len(small), end)
		}
		lo := slices.Index(small, u.Files[0])
		if lo < 0 || lo+len(u.Files) != end+1 || !slices.Equal(u.Files, small[lo:end+1]) || !picks(u.Files) || picks(small[lo+1:end+1]) {
			t.Fatalf("iter %d: want the shortest qualifying window of consecutive small files ending at %d, got %d files from %d", iter, end, len(u.Files), lo)
		}
	}
}

func sameFiles(a, b []*file) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(f *file) bool { return !slices.Contains(b, f) })
}

// TestPickAppendWriteAmp appends files of random sizes up to half the
// target to one bucket, compacts after each as the store does (outputs
// rolling at the target size, at the unit's level), and counts what
// compaction writes per byte appended and the small files left: at most 2
// bytes with files from 1/50 of the target, at most 3 from 1/500 and from
// 1/5000 (merging every 50 files with the output of the last merge
// rewrote the bucket every 49 files while it stayed below the target:
// about 25 there), and at most 2*50 small files per level whatever the
// number of files appended; with sequence numbers and without (the store's
// append files have none).
func TestPickAppendWriteAmp(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 4))
	for iter := range 90 {
		target, minNum := 10_000+rng.Int64N(100_000), 1+rng.IntN(8)
		var smallest, largest int64
		bound := 3.0
		switch iter % 3 {
		case 0:
			smallest, largest, bound = target/appendMaxFileNum, target/2, 2.0
		case 1:
			smallest, largest = target/(10*appendMaxFileNum), target/appendMaxFileNum
		case 2:
			target *= 10
			smallest, largest = target/(100*appendMaxFileNum), target/(10*appendMaxFileNum)
		}
		var live []*file
		var seq, appended, rewritten int64
		mostSmall, top := 0, 0
		for range 50 + rng.IntN(5000) {
			seq++
			f := &file{size: smallest + rng.Int64N(largest-smallest), seq: seq}
			if iter%2 == 1 {
				f.seq = 0 // as the store's append files have, outputs then sit among them
			}
			live = append(live, f)
			appended += f.size
			for picks := 0; ; picks++ {
				u := PickAppend(live, target, minNum, false)
				if u == nil {
					break
				}
				if picks == len(live) {
					t.Fatalf("iter %d (target %d, min %d): the picker keeps picking its own outputs", iter, target, minNum)
				}
				var size, maxSeq int64
				for _, in := range u.Files {
					size += in.size
					maxSeq = max(maxSeq, in.seq)
					live = slices.DeleteFunc(live, func(f *file) bool { return f == in })
				}
				rewritten += size
				top = max(top, u.OutputLevel)
				for ; size > 0; size -= target {
					live = append(live, &file{size: min(size, target), seq: maxSeq, level: u.OutputLevel})
				}
			}
			small := 0
			for _, f := range live {
				if f.size < target/2 {
					small++
				}
			}
			mostSmall = max(mostSmall, small)
		}
		if amp := float64(rewritten) / float64(appended); amp > bound {
			t.Fatalf("iter %d (target %d, min %d, files from %d): compaction wrote %d bytes for %d appended (%.2fx, want at most %v)", iter, target, minNum, smallest, rewritten, appended, amp, bound)
		}
		if mostSmall > 2*appendMaxFileNum*(top+1) {
			t.Fatalf("iter %d (target %d, min %d, files from %d): %d small files at once over %d levels", iter, target, minNum, smallest, mostSmall, top+1)
		}
	}
}
