package flightsql

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// DefaultHeartbeat is how often an advertising node renews its record in
// the warehouse's node registry; a node silent for three heartbeats is
// taken for gone.
const DefaultHeartbeat = 5 * time.Second

// nodeView is what an advertising server knows of the nodes serving its
// warehouse.
type nodeView struct {
	self      string // this node's location
	id        string // its record's name in the registry
	heartbeat time.Duration
	stop      chan struct{}
	done      chan struct{}

	mu   sync.Mutex
	live []string // locations of the live advertising nodes: self first, then the others sorted
}

// Advertise makes the server name location (a Flight URI such as
// grpc+tcp://host:port) in the endpoints of the FlightInfos of queries,
// and record it in the warehouse's node registry every heartbeat (0:
// DefaultHeartbeat), until Close. The endpoints of a result split for
// parallel readers then go round the live advertising nodes, this one
// first: every node redeems every node's tickets (they share the ticket
// key through the warehouse, and read the snapshots the ticket names).
// Without Advertise endpoints name no location, which tells clients to
// read them where they asked.
func (s *Server) Advertise(location string, heartbeat time.Duration) error {
	if u, err := url.Parse(location); err != nil || u.Host == "" || !slices.Contains([]string{"grpc", "grpc+tcp", "grpc+tls"}, u.Scheme) {
		return fmt.Errorf("advertise %q: not a Flight location grpc+tcp://host:port or grpc+tls://host:port", location)
	}
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	h := sha256.Sum256([]byte(location))
	v := &nodeView{self: location, id: hex.EncodeToString(h[:8]), heartbeat: heartbeat,
		stop: make(chan struct{}), done: make(chan struct{}), live: []string{location}}
	if err := v.beat(s); err != nil {
		return fmt.Errorf("advertise %s: %w", location, err)
	}
	s.nodes = v
	go v.loop(s)
	return nil
}

// beat renews this node's record and reads the live nodes.
func (v *nodeView) beat(s *Server) error {
	ctx := context.Background()
	store := s.eng.Store()
	if err := store.Heartbeat(ctx, v.id, v.self); err != nil {
		return err
	}
	infos, err := store.LiveNodes(ctx, 3*v.heartbeat)
	if err != nil {
		return err
	}
	var others []string
	for _, n := range infos {
		if n.Location != v.self {
			others = append(others, n.Location)
		}
	}
	slices.Sort(others)
	others = slices.Compact(others)
	v.mu.Lock()
	v.live = append([]string{v.self}, others...)
	v.mu.Unlock()
	return nil
}

func (v *nodeView) loop(s *Server) {
	defer close(v.done)
	t := time.NewTicker(v.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			// Best effort: a record left behind ages out.
			_ = s.eng.Store().LeaveNodes(context.Background(), v.id)
			return
		case <-t.C:
			if err := v.beat(s); err != nil {
				log.Printf("flightd: node registry: %v", err) // the next heartbeat tries again
			}
		}
	}
}

// close stops the heartbeats and leaves the registry.
func (v *nodeView) close() {
	if v == nil {
		return
	}
	close(v.stop)
	<-v.done
}

// location is the location of endpoint i of a result: nil when the server
// does not advertise, else the i-th live node round from this one.
func (v *nodeView) location(i int) []*flight.Location {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return []*flight.Location{{Uri: v.live[i%len(v.live)]}}
}
