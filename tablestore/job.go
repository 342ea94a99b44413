package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// JobDef is a continuous job as the catalog keeps it, so that it restarts
// with the server. The engine gives it meaning; the store only keeps it.
type JobDef struct {
	ID string `json:"id"`
	// SQL is the INSERT ... SELECT statement, bound again at each start in
	// Database.
	SQL      string `json:"sql"`
	Database string `json:"database"`
	// SinkDatabase is the database of the table the job writes, whose
	// grants decide who sees and stops the job (jobs stored before it
	// was kept use Database).
	SinkDatabase string `json:"sinkDatabase,omitempty"`
	// SinkTable is that table's name (jobs stored before it was kept
	// leave it empty): other nodes learn the job's target without binding
	// its query.
	SinkTable string `json:"sinkTable,omitempty"`
	// State is RUNNING, STOPPED or FAILED; Error says why it failed.
	State      string `json:"state"`
	Error      string `json:"error,omitempty"`
	TimeMillis int64  `json:"timeMillis"`
}

// Jobs live in a directory of the warehouse root whose name no database
// can have (databases end in .db), one metadata file each.
const jobDirName = "_jobs"

func (s *Store) jobPath(id string) string { return joinPath(s.root, jobDirName, id) }

// PutJob stores a job definition atomically, replacing one of the same id.
func (s *Store) PutJob(ctx context.Context, def JobDef) error {
	if err := validateName("job", def.ID); err != nil {
		return err
	}
	dir := joinPath(s.root, jobDirName)
	if err := s.fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("store job %s: %w", def.ID, err)
	}
	def.TimeMillis = s.opts.Now().UnixMilli()
	tmp := joinPath(dir, ".tmp-"+newUUID())
	if _, err := writeMeta(s.fs, tmp, def); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("store job %s: %w", def.ID, err)
	}
	if err := s.fs.Rename(tmp, s.jobPath(def.ID)); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("store job %s: %w", def.ID, err)
	}
	if err := s.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("store job %s: %w", def.ID, err)
	}
	return nil
}

// Jobs lists the stored job definitions, sorted by id.
func (s *Store) Jobs(ctx context.Context) ([]JobDef, error) {
	names, err := s.fs.List(joinPath(s.root, jobDirName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []JobDef
	for _, n := range names {
		if strings.Contains(n, ".") {
			continue // a temporary file, or a job's checkpoints (no id has a '.')
		}
		var def JobDef
		if err := readMeta(s.fs, s.jobPath(n), &def); err != nil {
			return nil, fmt.Errorf("job %s: %w", n, err)
		}
		out = append(out, def)
	}
	return out, nil // FS.List sorts
}

// Job reads the stored definition of job id; an error wrapping
// fs.ErrNotExist when there is none.
func (s *Store) Job(ctx context.Context, id string) (JobDef, error) {
	if err := validateName("job", id); err != nil {
		return JobDef{}, err
	}
	var def JobDef
	if err := readMeta(s.fs, s.jobPath(id), &def); err != nil {
		return JobDef{}, fmt.Errorf("job %s: %w", id, err)
	}
	return def, nil
}

// A job's checkpoints (its operators' state, engine/job.go) are files of
// the directory <id>.checkpoints beside its definition, each named by the
// snapshot of the job's sink whose commit it belongs to.
func (s *Store) jobCheckpointDir(id string) string {
	return joinPath(s.root, jobDirName, id+".checkpoints")
}

func checkpointName(sinkSnapshot int64) string { return strconv.FormatInt(sinkSnapshot, 10) }

// checkpointTmpPrefix starts the name of a checkpoint being written:
// the prefix, the sink snapshot, '-' and a UUID.
const checkpointTmpPrefix = ".tmp-"

// checkpointOf is the sink snapshot of a file of a job's checkpoint
// directory, written or being written; false for a name of neither form.
func checkpointOf(name string) (int64, bool) {
	if rest, ok := strings.CutPrefix(name, checkpointTmpPrefix); ok {
		name, _, _ = strings.Cut(rest, "-")
	}
	n, err := strconv.ParseInt(name, 10, 64)
	return n, err == nil
}

// PutJobCheckpoint stores job id's checkpoint of sink snapshot
// sinkSnapshot, the concatenation of data, atomically (whole or not at
// all).
func (s *Store) PutJobCheckpoint(ctx context.Context, id string, sinkSnapshot int64, data ...[]byte) error {
	if err := validateName("job", id); err != nil {
		return err
	}
	dir := s.jobCheckpointDir(id)
	if err := s.fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("job %s checkpoint: %w", id, err)
	}
	tmp := joinPath(dir, checkpointTmpPrefix+checkpointName(sinkSnapshot)+"-"+newUUID())
	if err := writeFileSync(s.fs, tmp, data...); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("job %s checkpoint: %w", id, err)
	}
	if err := s.fs.Rename(tmp, joinPath(dir, checkpointName(sinkSnapshot))); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("job %s checkpoint: %w", id, err)
	}
	return s.fs.SyncDir(dir)
}

// JobCheckpoint reads job id's checkpoint of sink snapshot sinkSnapshot;
// an error wrapping fs.ErrNotExist when there is none.
func (s *Store) JobCheckpoint(ctx context.Context, id string, sinkSnapshot int64) ([]byte, error) {
	if err := validateName("job", id); err != nil {
		return nil, err
	}
	b, err := readFileAll(s.fs, joinPath(s.jobCheckpointDir(id), checkpointName(sinkSnapshot)))
	if err != nil {
		return nil, fmt.Errorf("job %s checkpoint of sink snapshot %d: %w", id, sinkSnapshot, err)
	}
	return b, nil
}

// DeleteJobCheckpoints removes job id's checkpoints of sink snapshots
// before keep, and what writes of them left; all of them when keep is 0.
// Newer ones stay: they are another node's, which took the job over while
// this one, stale, still wrote its own (engine
// TestJobStaleCheckpointKeepsNewer).
func (s *Store) DeleteJobCheckpoints(ctx context.Context, id string, keep int64) error {
	if err := validateName("job", id); err != nil {
		return err
	}
	dir := s.jobCheckpointDir(id)
	names, err := s.fs.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %s checkpoints: %w", id, err)
	}
	for _, n := range names {
		if snap, ok := checkpointOf(n); ok && keep != 0 && snap >= keep {
			continue
		}
		if err := s.fs.Remove(joinPath(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("job %s checkpoints: %w", id, err)
		}
	}
	return nil
}
