import org.apache.beam.sdk.nexmark.NexmarkConfiguration;
import org.apache.beam.sdk.nexmark.model.Auction;
import org.apache.beam.sdk.nexmark.model.Bid;
import org.apache.beam.sdk.nexmark.model.Person;
import org.apache.beam.sdk.nexmark.sources.generator.Generator;
import org.apache.beam.sdk.nexmark.sources.generator.GeneratorConfig;

/**
 * Prints the first N events of Beam's generator, one tab-separated line each, in the format
 * bench/nexmark's TestBeamDump reads. Arguments: events, rate (events/s), out-of-order group size.
 */
public class BeamDump {
  public static void main(String[] args) {
    long events = Long.parseLong(args[0]);
    NexmarkConfiguration c = NexmarkConfiguration.DEFAULT.copy();
    c.numEventGenerators = 1;
    c.firstEventRate = Integer.parseInt(args[1]);
    c.nextEventRate = c.firstEventRate;
    c.outOfOrderGroupSize = Long.parseLong(args[2]);
    // Beam's fixed base time (NexmarkUtils.BASE_TIME), 2015-07-15T00:00:00Z.
    long baseTime = 1436918400000L;
    Generator g = new Generator(new GeneratorConfig(c, baseTime, 0, events, 0));
    StringBuilder sb = new StringBuilder();
    while (g.hasNext()) {
      Generator.NextEvent e = g.nextEvent();
      sb.setLength(0);
      sb.append(e.eventTimestamp).append('\t').append(e.watermark).append('\t');
      if (e.event.newPerson != null) {
        Person p = e.event.newPerson;
        sb.append("P\t").append(p.id).append('\t').append(p.name).append('\t').append(p.emailAddress)
            .append('\t').append(p.creditCard).append('\t').append(p.city).append('\t').append(p.state)
            .append('\t').append(p.dateTime.getMillis()).append('\t').append(p.extra);
      } else if (e.event.newAuction != null) {
        Auction a = e.event.newAuction;
        sb.append("A\t").append(a.id).append('\t').append(a.itemName).append('\t').append(a.description)
            .append('\t').append(a.initialBid).append('\t').append(a.reserve).append('\t')
            .append(a.dateTime.getMillis()).append('\t').append(a.expires.getMillis()).append('\t')
            .append(a.seller).append('\t').append(a.category).append('\t').append(a.extra);
      } else {
        Bid b = e.event.bid;
        sb.append("B\t").append(b.auction).append('\t').append(b.bidder).append('\t').append(b.price)
            .append('\t').append(b.dateTime.getMillis()).append('\t').append(b.extra);
      }
      System.out.println(sb);
    }
  }
}
