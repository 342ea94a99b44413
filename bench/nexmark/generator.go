package nexmark

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
)

// Kind is an event's type, the DDL's event_type.
type Kind int8

// The event types, numbered as the DDL's event_type.
const (
	KindPerson  Kind = 0
	KindAuction Kind = 1
	KindBid     Kind = 2
)

// Proportions of the event types in every 50 consecutive event ids, and
// the first ids, as in Beam's GeneratorConfig.
const (
	personProportion      = 1
	auctionProportion     = 3
	bidProportion         = 46
	proportionDenominator = personProportion + auctionProportion + bidProportion

	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10

	numCategories   = 5
	personIDLead    = 10
	auctionIDLead   = 10
	hotSellerRatio  = 100 // hot sellers, auctions and bidders are the first of each batch of 100 ids
	hotAuctionRatio = 100
	hotBidderRatio  = 100
	minStringLength = 3

	// Channels and URLs are nexmark-flink's additions to Beam's bids.
	hotChannelsRatio = 2
	numChannels      = 10_000
)

// BaseTime is Beam's fixed event time of event number 0
// (NexmarkUtils.BASE_TIME, 2015-07-15T00:00:00Z), in ms since the epoch.
const BaseTime int64 = 1436918400000

// Config is Beam's NexmarkConfiguration, reduced to what the generator
// reads, with one event rate (Beam's SQUARE shape with equal first and
// next rates).
type Config struct {
	Rate                int64 // events per second of event time, over all generators
	Generators          int64 // Beam's numEventGenerators: each has its own timeline
	BaseTime            int64 // event time of event number 0, ms since the epoch
	FirstEventID        int64
	FirstEventNumber    int64
	NumActivePeople     int64
	NumInFlightAuctions int64
	HotAuctionRatio     int32
	HotSellersRatio     int32
	HotBiddersRatio     int32
	AvgPersonBytes      int
	AvgAuctionBytes     int
	AvgBidBytes         int
	// OutOfOrderGroupSize shuffles event ids and times inside groups of
	// this many events (Beam's outOfOrderGroupSize; 1: in order).
	OutOfOrderGroupSize int64
	// ProbDelayedEvent is the chance that an event is emitted late, up
	// to OccasionalDelaySec seconds of event time after its time.
	ProbDelayedEvent   float64
	OccasionalDelaySec int64
}

// DefaultConfig is Beam's and nexmark-flink's defaults with one generator.
// nexmark-flink delays no event, so ProbDelayedEvent is 0.
func DefaultConfig() Config {
	return Config{
		Rate:                10_000,
		Generators:          1,
		BaseTime:            BaseTime,
		NumActivePeople:     1000,
		NumInFlightAuctions: 100,
		HotAuctionRatio:     2,
		HotSellersRatio:     4,
		HotBiddersRatio:     4,
		AvgPersonBytes:      200,
		AvgAuctionBytes:     500,
		AvgBidBytes:         100,
		OutOfOrderGroupSize: 1,
		OccasionalDelaySec:  3,
	}
}

// Validate says which setting is out of range.
func (c Config) Validate() error {
	var errs []error
	positive := func(name string, v int64) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("nexmark: %s must be positive, got %d", name, v))
		}
	}
	positive("rate", c.Rate)
	positive("generators", c.Generators)
	positive("active people", c.NumActivePeople)
	positive("in-flight auctions", c.NumInFlightAuctions)
	positive("hot auction ratio", int64(c.HotAuctionRatio))
	positive("hot sellers ratio", int64(c.HotSellersRatio))
	positive("hot bidders ratio", int64(c.HotBiddersRatio))
	positive("person size", int64(c.AvgPersonBytes))
	positive("auction size", int64(c.AvgAuctionBytes))
	positive("bid size", int64(c.AvgBidBytes))
	positive("out-of-order group size", c.OutOfOrderGroupSize)
	if c.FirstEventID < 0 || c.FirstEventNumber < 0 {
		errs = append(errs, fmt.Errorf("nexmark: first event id and number must not be negative"))
	}
	if !(c.ProbDelayedEvent >= 0 && c.ProbDelayedEvent <= 1) {
		errs = append(errs, fmt.Errorf("nexmark: delayed event probability must be in [0, 1], got %v", c.ProbDelayedEvent))
	}
	if c.ProbDelayedEvent > 0 {
		positive("occasional delay seconds", c.OccasionalDelaySec)
	}
	return errors.Join(errs...)
}

// Person, Auction and Bid are the events' fields; times are ms since the
// epoch.
type Person struct {
	ID                                          int64
	Name, EmailAddress, CreditCard, City, State string
	DateTime                                    int64
	Extra                                       string
}

type Auction struct {
	ID                    int64
	ItemName, Description string
	InitialBid, Reserve   int64
	DateTime, Expires     int64
	Seller, Category      int64
	Extra                 string
}

type Bid struct {
	Auction, Bidder, Price int64
	Channel, URL           string
	DateTime               int64
	Extra                  string
}

// Event is one generated event: Kind says which of Person, Auction and
// Bid is set.
type Event struct {
	Kind    Kind
	Person  Person
	Auction Auction
	Bid     Bid
	// Time is the event time (the entity's DateTime); Watermark the least
	// event time of this and every later event of the generator.
	Time, Watermark int64
	// Delay is how long after Time (ms of event time) the event is
	// emitted: 0 unless it is one of the delayed events.
	Delay int64
}

func (c Config) interEventDelayUs() int64 {
	// Beam's RateUnit.PER_SECOND.rateToPeriodUs, times the generators
	// sharing the rate.
	return (1_000_000 + c.Rate/2) / c.Rate * c.Generators
}

// timestamp is the event time of event number n.
func (c Config) timestamp(n int64) int64 {
	return c.BaseTime + n*c.interEventDelayUs()/1000
}

func (c Config) adjustedEventNumber(count int64) int64 {
	n := c.OutOfOrderGroupSize
	num := c.FirstEventNumber + count
	return num/n*n + num*953%n
}

// Event returns the event this generator emits after count others. It
// depends on count and the config only, so any range of events can be
// generated alone, in any order or in parallel.
func (c Config) Event(count int64) Event {
	num := c.adjustedEventNumber(count)
	ts := c.timestamp(num)
	n := c.OutOfOrderGroupSize
	watermark := c.timestamp((c.FirstEventNumber + count) / n * n)
	id := c.FirstEventID + num
	r := newJavaRandom(id)
	e := Event{Time: ts, Watermark: watermark}
	switch rem := id % proportionDenominator; {
	case rem < personProportion:
		e.Kind, e.Person = KindPerson, c.person(id, r, ts)
	case rem < personProportion+auctionProportion:
		e.Kind, e.Auction = KindAuction, c.auction(count, id, r, ts)
	default:
		e.Kind, e.Bid = KindBid, c.bid(id, r, ts)
	}
	if c.ProbDelayedEvent > 0 {
		// Beam draws delays from the source's own unseeded Random; a
		// second seeded one keeps the events reproducible and leaves
		// the event's own draws as Beam's.
		d := newJavaRandom(scramble(id ^ delaySalt))
		if d.Float64() < c.ProbDelayedEvent {
			e.Delay = 1 + int64(d.IntN(int32(c.OccasionalDelaySec*1000)))
		}
	}
	return e
}

// Salts of the extra generators' seeds, so their streams do not repeat an
// event's own.
const (
	delaySalt   = 0x64656c6179     // "delay"
	channelSalt = 0x6368616e6e656c // "channel"
	urlSalt     = 0x75726c00000000 // "url"
)

// scramble is splitmix64's finalizer: java.util.Random's first draws are
// correlated for consecutive seeds (so Beam's hot fractions stray from
// 1-1/ratio), which the extra generators avoid by scrambling the id.
func scramble(x int64) int64 {
	z := uint64(x)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return int64(z ^ z>>31)
}

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
)

func pick(r *javaRandom, from []string) string { return from[r.IntN(int32(len(from)))] }

func (c Config) person(id int64, r *javaRandom, ts int64) Person {
	p := Person{ID: lastBase0PersonID(id) + FirstPersonID, DateTime: ts}
	p.Name = pick(r, firstNames) + " " + pick(r, lastNames)
	p.EmailAddress = nextString(r, 7, ' ') + "@" + nextString(r, 5, ' ') + ".com"
	var cc strings.Builder
	for i := range 4 {
		if i > 0 {
			cc.WriteByte(' ')
		}
		fmt.Fprintf(&cc, "%04d", r.IntN(10000))
	}
	p.CreditCard = cc.String()
	p.City = pick(r, usCities)
	p.State = pick(r, usStates)
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = nextExtra(r, size, c.AvgPersonBytes)
	return p
}

func (c Config) auction(count, id int64, r *javaRandom, ts int64) Auction {
	a := Auction{ID: lastBase0AuctionID(id) + FirstAuctionID, DateTime: ts}
	if r.IntN(c.HotSellersRatio) > 0 {
		a.Seller = lastBase0PersonID(id) / hotSellerRatio * hotSellerRatio
	} else {
		a.Seller = c.nextBase0PersonID(id, r)
	}
	a.Seller += FirstPersonID
	a.Category = FirstCategoryID + int64(r.IntN(numCategories))
	a.InitialBid = nextPrice(r)
	a.Expires = ts + c.nextAuctionLengthMs(count, r, ts)
	a.ItemName = nextString(r, 20, ' ')
	a.Description = nextString(r, 100, ' ')
	a.Reserve = a.InitialBid + nextPrice(r)
	size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
	a.Extra = nextExtra(r, size, c.AvgAuctionBytes)
	return a
}

func (c Config) bid(id int64, r *javaRandom, ts int64) Bid {
	b := Bid{DateTime: ts}
	if r.IntN(c.HotAuctionRatio) > 0 {
		b.Auction = lastBase0AuctionID(id) / hotAuctionRatio * hotAuctionRatio
	} else {
		b.Auction = c.nextBase0AuctionID(id, r)
	}
	b.Auction += FirstAuctionID
	if r.IntN(c.HotBiddersRatio) > 0 {
		// The second person of the batch, so hot bidders are not hot sellers.
		b.Bidder = lastBase0PersonID(id)/hotBidderRatio*hotBidderRatio + 1
	} else {
		b.Bidder = c.nextBase0PersonID(id, r)
	}
	// nexmark-flink adds FirstPersonID a second time here (nexmark issue
	// 30); Beam, followed here, adds it once, so bidders join persons.
	b.Bidder += FirstPersonID
	b.Price = nextPrice(r)
	b.Channel, b.URL = channelAndURL(id)
	b.Extra = nextExtra(r, 8+8+8+8, c.AvgBidBytes)
	return b
}

// channelAndURL draws a bid's channel as nexmark-flink does (half of them
// one of four hot channels, the others one of 10,000), from a Random of
// its own so that the bid's other fields stay Beam's.
func channelAndURL(id int64) (string, string) {
	channelsOnce.Do(makeChannels)
	r := newJavaRandom(scramble(id ^ channelSalt))
	if r.IntN(hotChannelsRatio) > 0 {
		i := r.IntN(int32(len(hotChannels)))
		return hotChannels[i], hotURLs[i]
	}
	n := r.IntN(numChannels)
	return channelNames[n], channelURLs[n]
}

var (
	hotChannels  = []string{"Google", "Facebook", "Baidu", "Apple"}
	hotURLs      []string
	channelNames []string
	channelURLs  []string
	channelsOnce sync.Once
)

// makeChannels makes the URLs nexmark-flink draws once per process from
// unseeded Randoms; here each comes from a Random seeded by its channel,
// so they are the same in every run.
func makeChannels() {
	for i := range hotChannels {
		hotURLs = append(hotURLs, baseURL(newJavaRandom(urlSalt-1-int64(i))))
	}
	channelNames = make([]string, numChannels)
	channelURLs = make([]string, numChannels)
	for n := range numChannels {
		r := newJavaRandom(urlSalt + int64(n))
		url := baseURL(r)
		if r.IntN(10) > 0 {
			// Java's Math.abs(Integer.reverse(n)): channel 1 reverses to
			// MinInt32, which abs leaves negative.
			rev := int32(bits.Reverse32(uint32(n)))
			if rev < 0 {
				rev = -rev
			}
			url += "&channel_id=" + strconv.Itoa(int(rev))
		}
		channelNames[n] = "channel-" + strconv.Itoa(n)
		channelURLs[n] = url
	}
}

func baseURL(r *javaRandom) string {
	return "https://www.nexmark.com/" + nextString(r, 5, '_') + "/" + nextString(r, 5, '_') + "/" +
		nextString(r, 5, '_') + "/item.htm?query=1"
}

// lastBase0PersonID is the id (from 0) of the last person generated at or
// before event id.
func lastBase0PersonID(id int64) int64 {
	epoch, offset := id/proportionDenominator, id%proportionDenominator
	if offset >= personProportion {
		offset = personProportion - 1
	}
	return epoch*personProportion + offset
}

// lastBase0AuctionID is the id (from 0) of the last auction generated at
// or before event id.
func lastBase0AuctionID(id int64) int64 {
	epoch, offset := id/proportionDenominator, id%proportionDenominator
	switch {
	case offset < personProportion: // the last auction of the previous epoch
		epoch--
		offset = auctionProportion - 1
	case offset >= personProportion+auctionProportion: // the last of this epoch
		offset = auctionProportion - 1
	default:
		offset -= personProportion
	}
	return epoch*auctionProportion + offset
}

// nextBase0PersonID picks one of the active people, or one of the next
// few ids not generated yet.
func (c Config) nextBase0PersonID(id int64, r *javaRandom) int64 {
	numPeople := lastBase0PersonID(id) + 1
	active := min(numPeople, c.NumActivePeople)
	return numPeople - active + nextLong(r, active+personIDLead)
}

// nextBase0AuctionID picks one of the auctions likely still in flight, or
// one of the next few not generated yet.
func (c Config) nextBase0AuctionID(id int64, r *javaRandom) int64 {
	maxAuction := lastBase0AuctionID(id)
	minAuction := max(maxAuction-c.NumInFlightAuctions, 0)
	return minAuction + nextLong(r, maxAuction-minAuction+1+auctionIDLead)
}

// nextAuctionLengthMs averages the event time NumInFlightAuctions
// auctions take to be generated.
func (c Config) nextAuctionLengthMs(count int64, r *javaRandom, ts int64) int64 {
	num := c.adjustedEventNumber(count)
	eventsForAuctions := c.NumInFlightAuctions * proportionDenominator / auctionProportion
	horizon := c.timestamp(num+eventsForAuctions) - ts
	return 1 + nextLong(r, max(horizon*2, 1))
}

// nextLong is Beam's LongGenerator.nextLong: uniform in [0, n) below
// MaxInt32, skewed above (as in Beam).
func nextLong(r *javaRandom, n int64) int64 {
	if n < math.MaxInt32 {
		return int64(r.IntN(int32(n)))
	}
	v := r.Int64() % n
	if v < 0 {
		v = -v
	}
	return v
}

func nextPrice(r *javaRandom) int64 {
	return int64(math.Round(math.Pow(10, r.Float64()*6) * 100))
}

// nextString is 3 to maxLength-1 letters, each a space (or special) with
// odds 1/13, trimmed of spaces at both ends as Java's trim does.
func nextString(r *javaRandom, maxLength int32, special byte) string {
	n := minStringLength + r.IntN(maxLength-minStringLength)
	b := make([]byte, n)
	for i := range b {
		if r.IntN(13) == 0 {
			b[i] = special
		} else {
			b[i] = byte('a' + r.IntN(26))
		}
	}
	return strings.TrimFunc(string(b), func(c rune) bool { return c <= ' ' })
}

// nextExactString is length characters, six from each random int. As in
// Java, a negative int gives characters below 'a' (from 'H').
func nextExactString(r *javaRandom, length int) string {
	b := make([]byte, length)
	var rnd, left int32
	for i := range b {
		if left == 0 {
			rnd, left = r.Int(), 6
		}
		b[i] = byte('a' + rnd%26)
		rnd /= 26
		left--
	}
	return string(b)
}

// nextExtra pads an event to averageSize bytes on average, within ±20%.
func nextExtra(r *javaRandom, currentSize, averageSize int) string {
	if currentSize > averageSize {
		return ""
	}
	averageSize -= currentSize
	delta := int(math.Round(float64(averageSize) * 0.2))
	size := averageSize - delta
	if delta != 0 {
		size += int(r.IntN(int32(2 * delta)))
	}
	return nextExactString(r, size)
}
