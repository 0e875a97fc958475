//! A run read back from the results files of its shards: records merged into spans, the
//! totals and series over a time window.

use std::time::Duration;

use belier_stats::{Gauges, Metric, Point, Recorder, Series};

use crate::change::Change;
use crate::coarsening::{intervals_to_time, over_time};
use crate::histogram::Encoder;
use crate::info::{HostUsage, RunInfo, ShardHost};
use crate::line::{End, Header};
use crate::reader::{Reader, Record, ResultsError};
use crate::shard::ShardInfo;

/// One interval's latency histogram, kept encoded for an HdrHistogram interval log.
#[derive(Clone, Debug)]
pub struct LoggedInterval {
    /// Start from the start of the run.
    pub offset: Duration,
    /// Length.
    pub width: Duration,
    /// Largest latency in it, µs.
    pub max_us: u64,
    /// V2 compressed encoding, base64.
    pub encoded: String,
    /// Streamed messages' times in it, each that has values: `first_message`, `gap`,
    /// `round_trip` (the JSON report's names), its largest value (µs) and its histogram
    /// encoded as `encoded` is. Empty for a span without streaming calls.
    pub messages: Vec<(&'static str, u64, String)>,
}

/// A run read back from its results files: shards merged, summarised over a time window.
#[derive(Debug)]
pub struct Run {
    /// The header; for merged shards, the run information sums what the shards shared out.
    pub header: Header,
    /// The end line (merged), absent when a run was killed before writing it.
    pub end: Option<End>,
    /// What the readers had to tolerate (truncated last lines, missing ends).
    pub notes: Vec<String>,
    /// Everything recorded in the chosen records.
    pub totals: Recorder,
    /// One point per chosen span (a record, or records of several shards merged).
    pub series: Series,
    /// Time the chosen records cover.
    pub elapsed: Duration,
    /// The chosen spans' latency histograms, when asked for.
    pub latency_log: Vec<LoggedInterval>,
    /// Changes made to the run within the window, every shard's, in time order.
    pub changes: Vec<Change>,
}

/// Records of all shards that overlap in time, merged: one point of the series.
struct Span {
    /// First interval.
    start: u64,
    /// First interval after it.
    end: u64,
    recorder: Recorder,
    /// Per shard, the peaks of its gauges over the span; shards then combine.
    gauges: Vec<Option<Gauges>>,
}

/// Reads the shards of one run together, record by record in time order, and merges records
/// that overlap in time into one span: each span is one point of the series, and the totals
/// are every chosen span merged, so they are exact whatever the records' widths.
///
/// Records written one interval each (old files, the start of every run) make one span per
/// interval, all shards summed. Coarsened records are aligned on their width (see
/// [`Coarsening`](crate::Coarsening)), so records of shards that coarsened at different moments nest, and a span
/// is the widest record among them, holding the narrower ones of the other shards.
///
/// The window keeps the spans that overlap `[from, to)`, whole: a span that starts before
/// `from` or ends after `to` is kept with everything it holds, and the elapsed time is the
/// time the kept spans cover, so rates stay right. On a coarsened stretch the report may thus
/// cover up to one record more than the window on each side.
///
/// The changes are every shard's made within `[from, to)`, in time order (a shard's own
/// changes, when steered apart, stay separate lines).
///
/// Memory holds one record per shard and the span being merged, whatever the run's length
/// (and the changes, a handful a person made).
pub fn read_run(
    mut shards: Vec<Reader>,
    from: Option<Duration>,
    to: Option<Duration>,
    keep_latency_log: bool,
) -> Result<Run, ResultsError> {
    let (mut header, mut notes) = merged_header(&shards)?;
    let window = Window { from, to };
    let interval = Duration::from_secs_f64(header.interval_s);
    let mut chosen = Chosen::new(interval, window, keep_latency_log);
    merge_records(&mut shards, &mut chosen)?;
    let (end, changes) = merge_ends(shards, window, &mut notes);
    // A stream's targets were named at its end only.
    if let Some(e) = end.as_ref().filter(|_| header.run.targets.is_empty()) {
        header.run.targets.clone_from(&e.targets);
        if header.run.steps.is_empty() {
            header.run.steps.clone_from(&e.steps);
        }
    }
    let elapsed = chosen.end_at(end.as_ref());
    Ok(Run {
        header,
        end,
        notes,
        totals: chosen.totals,
        series: chosen.series,
        elapsed,
        latency_log: chosen.latency_log,
        changes,
    })
}

/// The first shard's header with every other shard's run information merged in, and a note
/// for each shard of a split run that is missing or given twice. Shards of different
/// intervals do not merge.
fn merged_header(shards: &[Reader]) -> Result<(Header, Vec<String>), ResultsError> {
    let mut header = shards
        .first()
        .map(|r| r.header().clone())
        .ok_or_else(|| ResultsError("no results file".into()))?;
    for other in &shards[1..] {
        if other.header().interval_s != header.interval_s {
            return Err(ResultsError(format!(
                "cannot merge '{}': intervals of {} s and {} s",
                header.name,
                header.interval_s,
                other.header().interval_s
            )));
        }
        merge_info(&mut header.run, &other.header().run);
    }
    let mut notes = Vec::new();
    // The shards of a split run: which were merged, and a warning for any missing.
    let mut split = header.run.shard.take();
    for other in &shards[1..] {
        split = ShardInfo::merge(split, &other.header().run.shard, &mut notes);
    }
    notes.extend(split.iter().flat_map(ShardInfo::warnings));
    header.run.shard = split;
    Ok((header, notes))
}

/// The part of the run a report covers: `[from, to)`, either end open.
#[derive(Clone, Copy)]
struct Window {
    from: Option<Duration>,
    to: Option<Duration>,
}

impl Window {
    /// Whether `[start, end)` overlaps the window.
    fn overlaps(self, start: Duration, end: Duration) -> bool {
        self.from.is_none_or(|f| end > f) && self.to.is_none_or(|t| start < t)
    }

    /// Whether the instant `at` lies in the window.
    fn holds(self, at: Duration) -> bool {
        self.from.is_none_or(|f| at >= f) && self.to.is_none_or(|t| at < t)
    }

    fn is_whole(self) -> bool {
        self.from.is_none() && self.to.is_none()
    }
}

/// The spans kept so far (those in the window): their totals, series and latency log, and
/// the intervals where the first starts and the last starts and ends.
struct Chosen {
    interval: Duration,
    window: Window,
    keep_latency_log: bool,
    encoder: Encoder,
    totals: Recorder,
    series: Series,
    latency_log: Vec<LoggedInterval>,
    first: Option<u64>,
    last: Option<(u64, u64)>,
}

impl Chosen {
    fn new(interval: Duration, window: Window, keep_latency_log: bool) -> Self {
        Chosen {
            interval,
            window,
            keep_latency_log,
            encoder: Encoder::default(),
            totals: Recorder::new(),
            series: Series::new(),
            latency_log: Vec::new(),
            first: None,
            last: None,
        }
    }

    /// The start of interval `index`, from the start of the run.
    fn at(&self, index: u64) -> Duration {
        intervals_to_time(self.interval, index)
    }

    /// Keeps `s` if it overlaps the window: a point of the series, added to the totals.
    fn take(&mut self, s: Span) -> Result<(), ResultsError> {
        let (offset, end) = (self.at(s.start), self.at(s.end));
        if !self.window.overlaps(offset, end) {
            return Ok(());
        }
        let gauges = s
            .gauges
            .iter()
            .flatten()
            .copied()
            .reduce(Gauges::combine)
            .unwrap_or_default();
        let width = end - offset;
        self.first.get_or_insert(s.start);
        self.last = Some((s.start, s.end));
        self.series
            .push(Point::of(&s.recorder, gauges, offset, width));
        self.totals += &s.recorder;
        if self.keep_latency_log {
            let h = s.recorder.histogram(Metric::Latency);
            let logged = LoggedInterval {
                offset,
                width,
                max_us: if h.is_empty() { 0 } else { h.max() },
                encoded: self.encode(h)?,
                messages: self.message_log(&s.recorder)?,
            };
            self.latency_log.push(logged);
        }
        Ok(())
    }

    fn encode(&mut self, h: &hdrhistogram::Histogram<u64>) -> Result<String, ResultsError> {
        self.encoder
            .encode(h)
            .map_err(|e| ResultsError(e.to_string()))
    }

    /// The span's streamed messages' times for the latency log, each that has values.
    fn message_log(
        &mut self,
        recorder: &Recorder,
    ) -> Result<Vec<(&'static str, u64, String)>, ResultsError> {
        let Some(m) = recorder.messages() else {
            return Ok(Vec::new());
        };
        let times = [
            ("first_message", m.first_message_us()),
            ("gap", m.gap_us()),
            ("round_trip", m.round_trip_us()),
        ];
        let mut logged = Vec::new();
        for (name, h) in times.into_iter().filter(|(_, h)| !h.is_empty()) {
            logged.push((name, h.max(), self.encode(h)?));
        }
        Ok(logged)
    }

    /// Ends the series where the run ended (as its end line says, or with the last record
    /// written) and returns the time the kept spans cover.
    fn end_at(&mut self, end: Option<&End>) -> Duration {
        let last = self.last.map(|(s, e)| (self.at(s), self.at(e)));
        let run_end = match end {
            Some(e) => Duration::from_secs_f64(e.elapsed_s),
            None => last.map_or(Duration::ZERO, |(_, e)| e),
        };
        let start = self.first.map(|i| self.at(i)).unwrap_or_default();
        let stop = last.map_or(start, |(s, e)| e.min(run_end.max(s)));
        if let Some(logged) = self.latency_log.last_mut() {
            logged.width = stop.saturating_sub(logged.offset);
        }
        self.series.end_at(stop);
        stop.saturating_sub(start)
    }
}

/// Reads every shard's records in time order and merges those that overlap into spans,
/// handing each complete span to `chosen`.
fn merge_records(shards: &mut [Reader], chosen: &mut Chosen) -> Result<(), ResultsError> {
    let mut next: Vec<Option<Record>> = Vec::with_capacity(shards.len());
    for shard in shards.iter_mut() {
        next.push(shard.next_record()?);
    }
    let mut span: Option<Span> = None;
    // Always the shard whose next record starts first, so shards advance together and a span
    // is complete once the next record starts at or after its end.
    while let Some(i) = (0..next.len())
        .filter(|&i| next[i].is_some())
        .min_by_key(|&i| next[i].as_ref().map(|r| r.index))
    {
        let r = next[i].take().expect("chosen because present");
        next[i] = shards[i].next_record()?;
        let r_end = r.index.saturating_add(r.intervals);
        match &mut span {
            Some(s) if r.index < s.end => {
                s.end = s.end.max(r_end);
                s.recorder += &r.recorder;
                let g = &mut s.gauges[i];
                *g = Some(g.map_or(r.gauges, |g| over_time(g, r.gauges)));
            }
            _ => {
                let mut gauges = vec![None; next.len()];
                gauges[i] = Some(r.gauges);
                let started = Span {
                    start: r.index,
                    end: r_end,
                    recorder: r.recorder,
                    gauges,
                };
                if let Some(done) = span.replace(started) {
                    chosen.take(done)?;
                }
            }
        }
    }
    if let Some(done) = span.take() {
        chosen.take(done)?;
    }
    Ok(())
}

/// The shards' end lines merged, and their changes within the window in time order; the
/// readers' notes go to `notes`.
fn merge_ends(
    shards: Vec<Reader>,
    window: Window,
    notes: &mut Vec<String>,
) -> (Option<End>, Vec<Change>) {
    let mut end: Option<End> = None;
    let mut changes = Vec::new();
    let merged = shards.len() > 1;
    let shards_thresholds = shards
        .iter()
        .filter(|s| s.end.as_ref().is_some_and(|e| !e.thresholds.is_empty()))
        .count();
    for shard in shards {
        notes.extend(shard.notes);
        changes.extend(
            shard
                .changes
                .into_iter()
                .filter(|c| window.holds(Duration::from_secs_f64(c.at_s))),
        );
        end = match (end, shard.end) {
            (Some(x), Some(y)) => Some(merge_end(x, y)),
            (x, y) => x.or(y),
        };
    }
    // Thresholds were judged on the whole of one process's run: they say nothing of several
    // shards merged, nor of a window of the run.
    if let Some(e) = end.as_mut().filter(|_| merged || !window.is_whole()) {
        if shards_thresholds > 0 {
            notes.push(if merged {
                "the plan's thresholds were judged by each shard on its own share; the merged run's are not known".into()
            } else {
                "the plan's thresholds were judged on the whole run, not on the --from/--to window".into()
            });
        }
        e.thresholds.clear();
    }
    // Stable: one shard's changes at one instant keep the order they were made in.
    changes.sort_by(|a: &Change, b: &Change| a.at_s.total_cmp(&b.at_s));
    (end, changes)
}

/// Adds a shard's run information to the merged one.
/// Counts saturate: they come from files, which may claim anything (an overflow panicked).
/// Adds to `a`, the information of one shard of a run, what shard `b` shared out (connections,
/// threads, rate, users, hosts): the information of the shards merged.
pub fn merge_info(a: &mut RunInfo, b: &RunInfo) {
    a.connections = a.connections.saturating_add(b.connections);
    a.threads = a.threads.saturating_add(b.threads);
    // Shards may run on one machine or on several: each keeps its own host.
    let own = |i: &RunInfo| ShardHost {
        name: i.host_name.clone(),
        cores: i.host_cores,
    };
    if a.shard_hosts.is_empty() {
        a.shard_hosts.push(own(a));
    }
    if b.shard_hosts.is_empty() {
        a.shard_hosts.push(own(b));
    } else {
        a.shard_hosts.extend(b.shard_hosts.iter().cloned());
    }
    a.workers.extend(b.workers.iter().cloned());
    a.host_cores = a.host_cores.max(b.host_cores);
    if a.host_name != b.host_name {
        a.host_name = None;
    }
    a.shards = a.shards.saturating_add(b.shards);
    a.requests = sum(a.requests, b.requests, u64::saturating_add);
    a.rate = sum(a.rate, b.rate, |x, y| x + y);
    a.max_connections = sum(a.max_connections, b.max_connections, usize::saturating_add);
    a.max_in_flight = sum(a.max_in_flight, b.max_in_flight, u64::saturating_add);
    a.virtual_users = sum(a.virtual_users, b.virtual_users, u64::saturating_add);
    if a.stages.len() == b.stages.len() {
        for (x, y) in a.stages.iter_mut().zip(&b.stages) {
            x.target += y.target;
        }
    }
    if b.started_at < a.started_at {
        a.started_at.clone_from(&b.started_at);
    }
}

fn merge_end(x: End, y: End) -> End {
    let elapsed_s = x.elapsed_s.max(y.elapsed_s);
    let (scenarios, scenario_totals) = crate::scenarios::merge_shards(
        (&x.scenarios, &x.scenario_totals),
        (&y.scenarios, &y.scenario_totals),
        Duration::from_secs_f64(elapsed_s),
    );
    End {
        elapsed_s,
        interrupted: x.interrupted || y.interrupted,
        warnings: x.warnings.into_iter().chain(y.warnings).collect(),
        host: HostUsage::merged(x.host, y.host),
        // Each shard judged its own share of the load: see `read_run`.
        thresholds: Vec::new(),
        targets: if x.targets.is_empty() {
            y.targets
        } else {
            x.targets
        },
        steps: if x.steps.is_empty() { y.steps } else { x.steps },
        scenarios,
        scenario_totals,
    }
}

fn sum<T>(a: Option<T>, b: Option<T>, add: fn(T, T) -> T) -> Option<T> {
    a.zip(b).map(|(x, y)| add(x, y))
}
