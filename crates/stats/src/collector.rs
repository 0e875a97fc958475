use std::collections::BTreeMap;
use std::time::Duration;

use crate::{Gauges, Point, Recorder, Series};

/// Merges the interval recorders that workers send into the run's total and its series.
///
/// Workers report interval `k` (covering `[k·interval, (k+1)·interval)` from the start) when it
/// ends. A point is complete once every worker has reported it or a later one, or has finished;
/// only then is it summarised, so each point's percentiles come from the merged histogram of all
/// workers rather than from an average of per-worker percentiles.
#[derive(Debug)]
pub struct Collector {
    interval: Duration,
    /// Per worker: the highest interval index reported, and whether it has finished.
    workers: Vec<(Option<u64>, bool)>,
    pending: BTreeMap<u64, (Recorder, Gauges)>,
    total: Recorder,
    series: Series,
    elapsed: Duration,
    /// Settled intervals kept for the caller (results files), when asked for.
    settled: Option<Vec<Settled>>,
}

/// An interval once every worker has reported it: what was recorded and the gauges.
#[derive(Clone, Debug)]
pub struct Settled {
    /// Interval number.
    pub index: u64,
    /// Start of the interval from the start of the run.
    pub offset: Duration,
    /// Everything recorded in it, all workers merged.
    pub recorder: Recorder,
    /// The workers' gauges, combined.
    pub gauges: Gauges,
}

impl Collector {
    /// A collector for `workers` workers reporting every `interval`.
    pub fn new(workers: usize, interval: Duration) -> Self {
        assert!(!interval.is_zero(), "interval must be positive");
        Collector {
            interval,
            workers: vec![(None, false); workers],
            pending: BTreeMap::new(),
            total: Recorder::new(),
            series: Series::new(),
            elapsed: Duration::ZERO,
            settled: None,
        }
    }

    /// Keeps every settled interval until [`Collector::drain_settled`] takes it.
    pub fn keep_settled(&mut self) {
        self.settled.get_or_insert_with(Vec::new);
    }

    /// The intervals settled since the last call, oldest first.
    pub fn drain_settled(&mut self) -> Vec<Settled> {
        self.settled
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Time from the start of the run to the end of the last worker that finished.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// Adds what `worker` recorded during interval `index`, and its gauges at the end of it.
    pub fn add(&mut self, worker: usize, index: u64, recorded: &Recorder, gauges: Gauges) {
        let (recorder, pending_gauges) = self.pending.entry(index).or_default();
        *recorder += recorded;
        *pending_gauges = pending_gauges.combine(gauges);
        let last = &mut self.workers[worker].0;
        *last = Some(last.map_or(index, |l| l.max(index)));
        self.settle();
    }

    /// Records that `worker` has moved past interval `index` without anything to add (a
    /// reader skipping intervals outside a time window), so other intervals can settle.
    pub fn skip(&mut self, worker: usize, index: u64) {
        let last = &mut self.workers[worker].0;
        *last = Some(last.map_or(index, |l| l.max(index)));
        self.settle();
    }

    /// Marks `worker` as finished after `elapsed` from the start of the run.
    pub fn finish_worker(&mut self, worker: usize, elapsed: Duration) {
        self.workers[worker].1 = true;
        self.elapsed = self.elapsed.max(elapsed);
        self.settle();
    }

    /// Everything recorded so far, including intervals not yet complete.
    pub fn requests_so_far(&self) -> u64 {
        self.total.requests()
            + self
                .pending
                .values()
                .map(|(r, _)| r.requests())
                .sum::<u64>()
    }

    /// Requests that failed so far, including intervals not yet complete.
    pub fn errors_so_far(&self) -> u64 {
        self.total.errors() + self.pending.values().map(|(r, _)| r.errors()).sum::<u64>()
    }

    /// Open loop: arrivals dropped so far, including intervals not yet complete.
    pub fn dropped_so_far(&self) -> u64 {
        self.total.dropped() + self.pending.values().map(|(r, _)| r.dropped()).sum::<u64>()
    }

    /// Everything in the intervals settled so far (live views: status codes, error kinds,
    /// per-step counts).
    pub fn settled_total(&self) -> &Recorder {
        &self.total
    }

    /// The series of the intervals settled so far.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The most recent complete interval, if any.
    pub fn latest(&self) -> Option<&Point> {
        self.series.points().last()
    }

    /// Settles every pending interval, whatever was reported: called once all workers are
    /// gone, even if some ended abnormally, so nothing recorded is lost.
    pub fn settle_all(&mut self) {
        for done in self.workers.iter_mut() {
            done.1 = true;
        }
        self.settle();
    }

    /// Ends collection ([`Collector::settle_all`] first) and returns the total and the series.
    pub fn finish(mut self) -> (Recorder, Series) {
        self.settle_all();
        let end = self.elapsed.max(
            self.series
                .points()
                .last()
                .map_or(Duration::ZERO, |p| p.offset),
        );
        self.series.end_at(end);
        (self.total, self.series)
    }

    fn settle(&mut self) {
        while let Some((&index, _)) = self.pending.first_key_value() {
            let complete = self
                .workers
                .iter()
                .all(|&(last, done)| done || last.is_some_and(|l| l >= index));
            if !complete {
                break;
            }
            let (recorded, gauges) = self.pending.remove(&index).expect("key just seen");
            let offset = self.interval * u32::try_from(index).unwrap_or(u32::MAX);
            self.series
                .push(Point::of(&recorded, gauges, offset, self.interval));
            self.total += &recorded;
            if let Some(settled) = &mut self.settled {
                settled.push(Settled {
                    index,
                    offset,
                    recorder: recorded,
                    gauges,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::{Outcome, Sample};

    fn recorder(latencies_us: &[u64]) -> Recorder {
        let mut r = Recorder::new();
        let t = Instant::now();
        for &l in latencies_us {
            r.record(&Sample {
                bytes_in: 1,
                bytes_out: 1,
                ..Sample::simulated(t, 0, l, Outcome::Response { status: 200 })
            });
        }
        r
    }

    #[test]
    fn point_waits_for_every_worker_and_merges_histograms() {
        let mut c = Collector::new(2, Duration::from_secs(1));
        c.add(
            0,
            0,
            &recorder(&[100, 100, 100]),
            Gauges {
                in_flight: 3,
                cpu: 0.5,
                connections_peak: 0,
                held: 0,
            },
        );
        c.add(0, 1, &recorder(&[100]), Gauges::default());
        // Worker 1 has not reported interval 0 yet: nothing settled.
        assert_eq!(c.series.points().len(), 0);
        assert_eq!(c.requests_so_far(), 4);
        c.add(
            1,
            0,
            &recorder(&[10_000]),
            Gauges {
                in_flight: 2,
                cpu: 0.9,
                connections_peak: 0,
                held: 0,
            },
        );
        assert_eq!(c.series.points().len(), 1);
        let p = &c.series.points()[0];
        assert_eq!(p.requests, 4);
        // The p99 of the merged histogram sees worker 1's slow request.
        assert!(p.p99_us >= 9_990, "{p:?}");
        // Gauges: in-flight requests add up, CPU keeps the busiest worker.
        assert_eq!(p.in_flight, 5);
        assert_eq!(p.cpu, 0.9);
        c.finish_worker(1, Duration::from_millis(1_500));
        c.finish_worker(0, Duration::from_millis(1_700));
        let (total, series) = c.finish();
        assert_eq!(total.requests(), 5);
        assert_eq!(series.points().len(), 2);
        assert_eq!(series.points()[1].width, Duration::from_millis(700));
    }

    #[test]
    fn settled_intervals_are_ready_once() {
        let mut c = Collector::new(1, Duration::from_secs(1));
        c.keep_settled();
        c.add(0, 0, &recorder(&[5]), Gauges::default());
        c.add(0, 1, &recorder(&[6, 7]), Gauges::default());
        let first = c.drain_settled();
        assert_eq!(first.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(first[1].recorder.requests(), 2);
        assert!(c.drain_settled().is_empty());
    }

    #[test]
    fn finish_keeps_intervals_of_workers_that_vanished() {
        let mut c = Collector::new(3, Duration::from_secs(1));
        c.add(0, 0, &recorder(&[1, 2]), Gauges::default());
        c.add(0, 1, &recorder(&[3]), Gauges::default());
        // Workers 1 and 2 never report (say they died): finish still counts everything.
        let (total, series) = c.finish();
        assert_eq!(total.requests(), 3);
        assert_eq!(series.points().len(), 2);
    }
}
