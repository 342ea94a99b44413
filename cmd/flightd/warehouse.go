package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/tablestore/objfs"
)

// warehouse is where -data points: a local directory, or a bucket and
// path of an object store (s3://bucket/path) that several nodes may share.
// Spill files stay local either way.
type warehouse struct {
	fs    tablestore.FS
	root  string // the warehouse root inside fs
	spill string // local directory for spill files
	desc  string // for logs
	// metadataMaxAge is the default of -metadata-max-age: on an object
	// store, where asking for a table's latest snapshot and schema costs
	// round trips, a second.
	metadataMaxAge time.Duration
	// cleanup removes what the process made locally for an object store
	// (spill and cache directories).
	cleanup func()
}

type objectFlags struct {
	cfg        objfs.Config
	cacheDir   string
	cacheBytes int64
}

func openWarehouse(ctx context.Context, data string, obj objectFlags) (*warehouse, error) {
	if !strings.Contains(data, "://") {
		root, err := filepath.Abs(data)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		spill, release, err := lockedSpillDir(filepath.Join(root, ".spill"))
		if err != nil {
			return nil, err
		}
		return &warehouse{fs: tablestore.NewLocalFS(), root: root, spill: spill, desc: root, cleanup: release}, nil
	}
	bucket, root, err := objfs.ParseURL(data)
	if err != nil {
		return nil, err
	}
	client, err := objfs.NewClient(obj.cfg)
	if err != nil {
		return nil, err
	}
	ok, err := client.BucketExists(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: bucket %q: %w", data, bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("warehouse %s: bucket %q does not exist", data, bucket)
	}
	local, err := os.MkdirTemp("", "flightd-")
	if err != nil {
		return nil, err
	}
	w := &warehouse{root: root, spill: filepath.Join(local, "spill"), desc: data, metadataMaxAge: time.Second, cleanup: func() { os.RemoveAll(local) }}
	var cache *objfs.Cache
	if obj.cacheBytes > 0 {
		dir := obj.cacheDir
		if dir == "" {
			dir = filepath.Join(local, "cache")
		}
		if cache, err = objfs.NewCache(dir, obj.cacheBytes); err != nil {
			w.cleanup()
			return nil, err
		}
	}
	if err := os.MkdirAll(w.spill, 0o755); err != nil {
		w.cleanup()
		return nil, err
	}
	w.fs = objfs.New(context.WithoutCancel(ctx), client, bucket, cache)
	return w, nil
}

// loadKey reads the key that signs tickets and tokens, creating it with 32
// random bytes if it does not exist, so tickets and tokens survive
// restarts; servers given the same file (or sharing the warehouse, where
// the default key lives) accept each other's.
func loadKey(fsys tablestore.FS, path string) ([]byte, error) {
	key, err := readKey(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKey(fsys, path); err != nil {
			return nil, fmt.Errorf("create key file: %w", err)
		}
		key, err = readKey(fsys, path)
	}
	if err != nil {
		return nil, err
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("key file %s: %d bytes, want at least 32", path, len(key))
	}
	return key, nil
}

func readKey(fsys tablestore.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	key := make([]byte, f.Size())
	if _, err := f.ReadAt(key, 0); err != nil {
		return nil, err
	}
	return key, nil
}

func createKey(fsys tablestore.FS, path string) error {
	var key, id [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return err
	}
	_, _ = rand.Read(id[:8])
	tmp := filepath.Join(filepath.Dir(path), ".key-"+hex.EncodeToString(id[:8]))
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(key[:])
	if err := errors.Join(err, f.Sync(), f.Close()); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	// Published only if absent: when another server over the same
	// warehouse created the key first, its key holds for both.
	if err := fsys.RenameNoReplace(tmp, path); err != nil {
		_ = fsys.Remove(tmp)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// lockedSpillDir makes this process's spill directory under parent and
// removes those of processes that are gone: each holds an flock on its
// directory while it runs, so nodes sharing a data directory keep theirs.
func lockedSpillDir(parent string) (string, func(), error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, err
	}
	names, err := os.ReadDir(parent)
	if err != nil {
		return "", nil, err
	}
	for _, e := range names {
		d := filepath.Join(parent, e.Name())
		if !e.IsDir() {
			_ = os.Remove(d) // spill files of the single-directory layout
			continue
		}
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(d) // files of a crashed run
		}
		f.Close()
	}
	dir, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return "", nil, err
	}
	f, err := os.Open(dir)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("lock spill directory %s: %w", dir, err)
	}
	return dir, func() { os.RemoveAll(dir); f.Close() }, nil
}
