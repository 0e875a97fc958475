//! The worker's clock against the coordinator's, NTP-style: the coordinator notes when it
//! asked (t0) and when the answer came (t3), the worker its own time in between (t); the
//! offset is `t − (t0 + t3) / 2` with an error of at most half the round trip, so the sample
//! with the shortest round trip wins.

use std::time::Duration;

/// One exchange, nanoseconds since the Unix epoch: the coordinator's `sent` and `received`,
/// the worker's `worker` in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Coordinator's clock when the request left.
    pub sent: i128,
    /// Worker's clock when it answered.
    pub worker: i128,
    /// Coordinator's clock when the answer came.
    pub received: i128,
}

/// The worker's clock against the coordinator's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset {
    /// Worker's clock minus the coordinator's, nanoseconds.
    pub offset_ns: i128,
    /// The round trip of the sample it came from: the offset is right within half of it.
    pub round_trip: Duration,
}

impl Sample {
    /// The offset this exchange gives.
    pub fn offset(&self) -> Offset {
        let rtt = (self.received - self.sent).max(0);
        Offset {
            offset_ns: self.worker - (self.sent + self.received) / 2,
            round_trip: Duration::from_nanos(u64::try_from(rtt).unwrap_or(u64::MAX)),
        }
    }
}

/// The offset of the sample with the shortest round trip, if any.
pub fn best(samples: &[Sample]) -> Option<Offset> {
    samples
        .iter()
        .map(Sample::offset)
        .min_by_key(|o| o.round_trip)
}

/// This machine's wall clock, nanoseconds since the Unix epoch.
pub fn wall_ns() -> i128 {
    let now = std::time::SystemTime::now();
    match now.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
        Err(e) => -i128::try_from(e.duration().as_nanos()).unwrap_or(i128::MAX),
    }
}

/// The monotonic instant at which this machine's wall clock reads `wall` (nanoseconds since
/// the Unix epoch); now, if that is past.
pub fn instant_at(wall: i128) -> std::time::Instant {
    let now = std::time::Instant::now();
    let ahead = wall - wall_ns();
    match u64::try_from(ahead) {
        Ok(ns) => now + Duration::from_nanos(ns),
        Err(_) => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symmetric_exchange_gives_the_exact_offset() {
        // The worker is 5 ms ahead; 1 ms each way.
        let s = Sample {
            sent: 100_000_000,
            worker: 106_000_000,
            received: 102_000_000,
        };
        assert_eq!(s.offset().offset_ns, 5_000_000);
        assert_eq!(s.offset().round_trip, Duration::from_millis(2));
    }

    #[test]
    fn the_shortest_round_trip_wins() {
        let samples = [
            // A slow answer: 20 ms round trip, all of it on the way back.
            Sample {
                sent: 0,
                worker: 5_000_000,
                received: 20_000_000,
            },
            Sample {
                sent: 30_000_000,
                worker: 35_500_000,
                received: 31_000_000,
            },
        ];
        let o = best(&samples).unwrap();
        assert_eq!(o.offset_ns, 5_000_000);
        assert_eq!(o.round_trip, Duration::from_millis(1));
        assert_eq!(best(&[]), None);
    }
}
