package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Nodes sharing a warehouse announce where clients reach them in a record
// each, _nodes/<id>, rewritten at every heartbeat; a node whose record is
// older than a few heartbeats is taken for gone.

// NodeInfo is a node's record.
type NodeInfo struct {
	ID string `json:"id"`
	// Location is the Flight location clients reach the node at.
	Location        string `json:"location"`
	HeartbeatMillis int64  `json:"heartbeatMillis"`
}

const nodeDirName = "_nodes"

// Heartbeat writes node id's record (replacing the former one atomically)
// with the time now.
func (s *Store) Heartbeat(ctx context.Context, id, location string) error {
	if err := validateName("node", id); err != nil {
		return err
	}
	info := NodeInfo{ID: id, Location: location, HeartbeatMillis: s.opts.Now().UnixMilli()}
	if err := s.replaceMeta(s.root, nodeDirName, id, info); err != nil {
		return fmt.Errorf("node %s: %w", id, err)
	}
	return nil
}

// LeaveNodes removes node id's record, so that others stop naming it at once.
func (s *Store) LeaveNodes(ctx context.Context, id string) error {
	if err := validateName("node", id); err != nil {
		return err
	}
	err := s.fs.Remove(joinPath(s.root, nodeDirName, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// LiveNodes lists the nodes whose last heartbeat is no older than within,
// sorted by id. It removes the records of nodes silent for ten times that
// (killed, never left), so that they do not pile up.
func (s *Store) LiveNodes(ctx context.Context, within time.Duration) ([]NodeInfo, error) {
	dir := joinPath(s.root, nodeDirName)
	names, err := s.fs.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	oldest := s.opts.Now().Add(-within).UnixMilli()
	var out []NodeInfo
	for _, n := range names {
		if strings.HasPrefix(n, ".tmp-") {
			continue
		}
		var info NodeInfo
		if err := readMeta(s.fs, joinPath(dir, n), &info); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // left meanwhile
			}
			return nil, fmt.Errorf("node %s: %w", n, err)
		}
		switch {
		case info.HeartbeatMillis >= oldest:
			out = append(out, info)
		case info.HeartbeatMillis < s.opts.Now().Add(-10*within).UnixMilli():
			_ = s.fs.Remove(joinPath(dir, n)) // best effort; a node back from the dead writes it again
		}
	}
	return out, nil
}
