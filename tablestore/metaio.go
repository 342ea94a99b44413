package tablestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/flightd/flightd/tablestore/meta"
)

// The metadata files on the store's FS: meta encodes and decodes them,
// these read and write them.

// readMeta reads and verifies a metadata file. A missing file gives an error
// wrapping fs.ErrNotExist.
func readMeta(fsys FS, name string, v any) error {
	data, err := readFileAll(fsys, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("read %s: %w", name, err)
	}
	return meta.Decode(name, data, v)
}

// writeMeta writes one of flightd's own metadata files (with a checksum
// trailer) under a fresh name and syncs it.
func writeMeta(fsys FS, name string, v any) (int64, error) {
	data, err := meta.Encode(v)
	if err != nil {
		return 0, err
	}
	return writeMetaBytes(fsys, name, data)
}

// writePaimonJSON writes one of Paimon's JSON metadata files under a fresh
// name and syncs it.
func writePaimonJSON(fsys FS, name string, v any) (int64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	return writeMetaBytes(fsys, name, data)
}

func writeMetaBytes(fsys FS, name string, data []byte) (int64, error) {
	if err := writeFileSync(fsys, name, data); err != nil {
		return 0, fmt.Errorf("write %s: %w", name, err)
	}
	return int64(len(data)), nil
}
