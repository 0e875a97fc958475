use std::sync::OnceLock;

use hdrhistogram::Histogram;

use crate::custom::MetricRow;
use crate::error_kind::ErrorKind;
use crate::exemplars::Exemplars;
use crate::extremes::{Extremes, Range};
use crate::histogram::{new_histogram, Metric, HISTOGRAM_SIGFIG};
use crate::latency::LatencySummary;
use crate::messages::{CallMessages, MessageCounts, Messages, StreamedBody};
use crate::restore::RestoreError;
use crate::row::row_mut;
use crate::sample::{Outcome, Sample, GRPC_CODES};
use crate::server_timing::{ServerTimes, TimingHeader};
use crate::step::{CheckCounts, StepRow};

mod merge;
mod stored;

pub use stored::Counters;

/// Status codes are counted in a flat array indexed by code; anything outside is clamped to 0.
const STATUS_SLOTS: usize = 1000;

/// Counts everything about a set of finished requests; merges with `+=`.
///
/// A recorder's histograms are made when their first value comes: one at three figures holds
/// 184 KiB of counts, all written when it is made, so a recorder holds only those of what it
/// recorded (a run without TLS never makes the handshake's, an interval without a connect
/// never makes the connect's). Beyond them a recorder has a fixed size, whatever it records.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// One histogram per [`Metric`], in [`Metric::ALL`]'s order; `None` until its first
    /// value.
    histograms: [Option<Box<Histogram<u64>>>; Metric::ALL.len()],
    /// The exact smallest and largest value of each histogram.
    extremes: Extremes,
    /// The slowest complete responses, one by one.
    exemplars: Exemplars,
    /// Scripted users: each step's slowest, by step number (empty without users).
    step_exemplars: Vec<Exemplars>,
    scheduled: u64,
    dropped: u64,
    status: Box<[u64; STATUS_SLOTS]>,
    /// gRPC calls by status code.
    grpc: [u64; GRPC_CODES],
    /// Streaming gRPC calls' messages, from the first such call on.
    messages: Option<Box<Messages>>,
    errors: [u64; ErrorKind::COUNT],
    error_examples: [Option<String>; ErrorKind::COUNT],
    tls_session: Option<String>,
    bytes_in: u64,
    bytes_out: u64,
    bytes_decoded: u64,
    connections_opened: u64,
    server_closes: u64,
    resent: u64,
    tls_resumed: u64,
    kernel_stamped: u64,
    wakeups: u64,
    /// Scripted users: one row per request step, by step number (empty without users).
    steps: Vec<StepRow>,
    /// Scripted users: pass and fail counts per check, by check number.
    checks: Vec<CheckCounts>,
    /// Scripted users: custom metrics (counters and trends), by metric number.
    metrics: Vec<MetricRow>,
    /// Scripted users: iterations completed.
    iterations: u64,
    /// Requests by the addresses of their connections, from the first such request on (runs
    /// that spread connections over several addresses).
    routes: Option<Box<crate::routes::Routes>>,
    /// Held connections (`--hold`), from the first one counted on.
    held: Option<Box<crate::held::Held>>,
    /// QUIC's own figures (HTTP/3 runs), from the first connection counted on.
    quic: Option<Box<crate::quic::Quic>>,
    /// The server's own times (`--server-timing`), from the first response read for them on.
    server_times: Option<Box<ServerTimes>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Recorder {
            histograms: Default::default(),
            extremes: Extremes::default(),
            exemplars: Exemplars::default(),
            step_exemplars: Vec::new(),
            scheduled: 0,
            dropped: 0,
            status: Box::new([0; STATUS_SLOTS]),
            grpc: [0; GRPC_CODES],
            messages: None,
            errors: [0; ErrorKind::COUNT],
            error_examples: Default::default(),
            tls_session: None,
            bytes_in: 0,
            bytes_out: 0,
            bytes_decoded: 0,
            connections_opened: 0,
            server_closes: 0,
            resent: 0,
            tls_resumed: 0,
            kernel_stamped: 0,
            wakeups: 0,
            steps: Vec::new(),
            checks: Vec::new(),
            metrics: Vec::new(),
            iterations: 0,
            routes: None,
            held: None,
            quic: None,
            server_times: None,
        }
    }

    /// Records one finished request.
    ///
    /// Latency goes into the histogram only for complete responses: a refused connect takes
    /// microseconds and a timeout takes exactly the timeout, and mixing those in would distort
    /// the latency of the requests that were actually served.
    #[inline]
    pub fn record(&mut self, sample: &Sample) {
        self.bytes_in += sample.bytes_in;
        self.bytes_out += sample.bytes_out;
        self.value(Metric::Lag, sample.lag_us());
        if let Some(d) = sample.dispatch_lag_us() {
            self.value(Metric::Dispatch, d);
        }
        // Connection phases count whenever they happened, even if the request then failed.
        if let Some(c) = sample.connect_us() {
            self.value(Metric::Connect, c);
        }
        if let Some(t) = sample.tls_us() {
            self.value(Metric::Tls, t);
        }
        match sample.outcome {
            Outcome::Response { status } => {
                self.answered(sample);
                let slot = usize::from(status);
                self.status[if slot < STATUS_SLOTS { slot } else { 0 }] += 1;
            }
            Outcome::Grpc { code } => {
                self.answered(sample);
                let slot = usize::from(code);
                // UNKNOWN for a code outside the 17, as gRPC's clients read one.
                self.grpc[if slot < GRPC_CODES { slot } else { 2 }] += 1;
            }
            Outcome::Error(kind) => self.errors[kind.index()] += 1,
        }
    }

    /// Records the latencies of a request that was answered.
    #[inline]
    fn answered(&mut self, sample: &Sample) {
        self.value(Metric::Latency, sample.latency_us());
        self.exemplars.offer(sample);
        self.value(Metric::Uncorrected, sample.uncorrected_latency_us());
        if let (Some(ttfb), Some(transfer)) = (sample.ttfb_us(), sample.transfer_us()) {
            self.value(Metric::Ttfb, ttfb);
            self.value(Metric::Transfer, transfer);
        }
    }

    /// Records the messages of a streaming gRPC call, besides [`Recorder::record`], which
    /// counts the call itself.
    pub fn record_messages(&mut self, call: &CallMessages<'_>) {
        self.messages_mut().record(call);
    }

    /// Records a streamed response body's messages (events, chunks or token chunks) and what
    /// `body` adds (its unit, its output tokens), besides [`Recorder::record`].
    pub fn record_body_stream(&mut self, call: &CallMessages<'_>, body: &StreamedBody) {
        self.messages_mut().record_body(call, body);
    }

    /// Records a WebSocket's messages (the socket is the call), besides
    /// [`Recorder::record`], which counts the socket itself.
    pub fn record_socket_messages(&mut self, call: &CallMessages<'_>) {
        self.messages_mut().record_socket(call);
    }

    /// Records a WebSocket's round trips timed from each message's actual send (see
    /// [`Messages::round_trip_sent_us`]), besides [`Recorder::record_socket_messages`].
    pub fn record_sent_round_trips(&mut self, times: &crate::MessageTimes) {
        self.messages_mut().record_sent_round_trips(times);
    }

    /// Records `sample` under the addresses of the connection it went over (see
    /// [`crate::Routes`]), besides [`Recorder::record`]; `opened`: it opened that connection.
    pub fn record_route(&mut self, sample: &Sample, route: crate::Route, opened: bool) {
        self.routes_mut().record(sample, route, opened);
    }

    /// The requests by address, when the run recorded them.
    pub fn routes(&self) -> Option<&crate::Routes> {
        self.routes.as_deref().filter(|r| !r.is_empty())
    }

    fn routes_mut(&mut self) -> &mut crate::Routes {
        self.routes.get_or_insert_with(Box::default)
    }

    /// Records one complete response's header for the server's time (see
    /// [`crate::ServerTimes`]): `value` is the header's value (several joined by commas),
    /// `None` when the response had none; `latency_us` is its latency from the intended start.
    pub fn record_server_timing(
        &mut self,
        header: TimingHeader<'_>,
        value: Option<&[u8]>,
        latency_us: u64,
    ) {
        self.server_times_mut().record(header, value, latency_us);
    }

    /// The server's own times, when the run read them.
    pub fn server_times(&self) -> Option<&ServerTimes> {
        self.server_times.as_deref().filter(|t| !t.is_empty())
    }

    fn server_times_mut(&mut self) -> &mut ServerTimes {
        self.server_times.get_or_insert_with(Box::default)
    }

    /// Counts one held connection opened (see [`crate::Held`]).
    pub fn record_held_opened(&mut self) {
        self.held_mut().opened += 1;
    }

    /// Counts one held connection the server ended.
    pub fn record_held_closed(&mut self) {
        self.held_mut().closed += 1;
    }

    /// Counts one attempt to open or keep a held connection that failed, under its kind.
    pub fn record_held_failed(&mut self, kind: ErrorKind) {
        self.held_mut().fail(kind);
    }

    /// What became of the run's held connections, when it held some.
    pub fn held(&self) -> Option<&crate::Held> {
        self.held.as_deref().filter(|h| !h.is_empty())
    }

    fn held_mut(&mut self) -> &mut crate::Held {
        self.held.get_or_insert_with(Box::default)
    }

    /// Adds what QUIC connections did (see [`crate::Quic`]).
    pub fn record_quic(&mut self, quic: &crate::Quic) {
        if !quic.is_empty() {
            self.quic_mut().add(quic);
        }
    }

    /// What the run's QUIC connections did, when it had some.
    pub fn quic(&self) -> Option<&crate::Quic> {
        self.quic.as_deref().filter(|q| !q.is_empty())
    }

    fn quic_mut(&mut self) -> &mut crate::Quic {
        self.quic.get_or_insert_with(Box::default)
    }

    /// Records how a WebSocket ended: the close code it ended with (see
    /// [`Messages::closes`]), besides [`Recorder::record_messages`].
    pub fn record_close(&mut self, code: u16) {
        self.messages_mut().record_close(code);
    }

    /// Records what a WebSocket that offered permessage-deflate agreed to (see
    /// [`Messages::extensions`]).
    pub fn record_extension(&mut self, extension: &str) {
        self.messages_mut().record_extension(extension);
    }

    /// Records a streaming gRPC call that ended OK `latency_us` after it was due, and its
    /// `messages`: a recorder as a run of such calls leaves it, for the tests of what reads
    /// one (as [`Sample::simulated`] is).
    pub fn record_simulated_stream(&mut self, latency_us: u64, messages: &CallMessages<'_>) {
        let now = std::time::Instant::now();
        let call = Sample::simulated(now, 0, latency_us, Outcome::Grpc { code: 0 });
        self.record(&call);
        self.record_messages(messages);
    }

    /// The messages of the streaming gRPC calls recorded, if there were any.
    pub fn messages(&self) -> Option<&Messages> {
        self.messages.as_deref().filter(|m| m.calls() > 0)
    }

    fn messages_mut(&mut self) -> &mut Messages {
        self.messages
            .get_or_insert_with(|| Box::new(Messages::new(MessageCounts::default())))
    }

    /// Records `value` in `metric`'s histogram and range.
    #[inline]
    fn value(&mut self, metric: Metric, value: u64) {
        self.histogram_mut(metric).saturating_record(value);
        self.extremes.note(metric, value);
    }

    /// Counts `count` requests that failed with `kind` without a sample each (for example the
    /// requests abandoned in flight when a run stops).
    pub fn record_errors(&mut self, kind: ErrorKind, count: u64) {
        self.errors[kind.index()] += count;
    }

    /// Keeps `message` as the example for `kind` unless one is kept already. The message is only
    /// formatted the first time, so calling this on every error costs a branch.
    pub fn note_error_example(&mut self, kind: ErrorKind, message: impl FnOnce() -> String) {
        let slot = &mut self.error_examples[kind.index()];
        if slot.is_none() {
            *slot = Some(message());
        }
    }

    /// Counts one arrival that came due (open loop).
    #[inline]
    pub fn record_scheduled(&mut self) {
        self.scheduled += 1;
    }

    /// Counts one arrival that was never sent because the in-flight cap was reached.
    #[inline]
    pub fn record_dropped(&mut self) {
        self.dropped += 1;
    }

    /// Keeps a description of a TLS session (version, cipher, ALPN) unless one is kept.
    pub fn note_tls_session(&mut self, describe: impl FnOnce() -> String) {
        if self.tls_session.is_none() {
            self.tls_session = Some(describe());
        }
    }

    /// The first TLS session's description, if any connection used TLS.
    pub fn tls_session(&self) -> Option<&str> {
        self.tls_session.as_deref()
    }

    /// Counts one connection the server ended (asked to close, closed or reset it) while
    /// belier meant to keep it.
    #[inline]
    pub fn record_server_close(&mut self) {
        self.server_closes += 1;
    }

    /// Connections the server ended while belier meant to keep them.
    pub fn server_closes(&self) -> u64 {
        self.server_closes
    }

    /// Counts one request sent again on a new connection because the server had closed the
    /// one it was first written on without reading it: an idle HTTP/1.1 keep-alive connection
    /// closed as the request crossed the close, or an HTTP/2 stream above the last stream id of
    /// a GOAWAY (RFC 9113 §6.8: not processed). The request itself is recorded once.
    #[inline]
    pub fn record_resent(&mut self) {
        self.resent += 1;
    }

    /// Requests sent again after the server closed their first connection unread.
    pub fn resent(&self) -> u64 {
        self.resent
    }

    /// Counts one response whose first-byte and completion times are the kernel's receive
    /// stamps rather than the times user space read it.
    #[inline]
    pub fn record_kernel_stamped(&mut self) {
        self.kernel_stamped += 1;
    }

    /// Responses timed by the kernel's receive stamps.
    pub fn kernel_stamped(&self) -> u64 {
        self.kernel_stamped
    }

    /// Counts `n` wake-ups of the generator's worker threads: the times one slept and was
    /// woken (voluntary context switches), which cost far more than the work of a request.
    #[inline]
    pub fn record_wakeups(&mut self, n: u64) {
        self.wakeups += n;
    }

    /// Wake-ups of the generator's worker threads (see [`Recorder::record_wakeups`]).
    pub fn wakeups(&self) -> u64 {
        self.wakeups
    }

    /// Counts one TLS handshake that resumed an earlier session (abbreviated handshake).
    #[inline]
    pub fn record_tls_resumed(&mut self) {
        self.tls_resumed += 1;
    }

    /// TLS handshakes that resumed an earlier session.
    pub fn tls_resumed(&self) -> u64 {
        self.tls_resumed
    }

    /// Counts one TCP connection opened.
    #[inline]
    pub fn record_connection(&mut self) {
        self.connections_opened += 1;
    }

    /// Forgets everything, keeping the allocations.
    pub fn reset(&mut self) {
        for m in Metric::ALL {
            self.histogram_mut(m).reset();
        }
        self.extremes = Extremes::default();
        self.exemplars = Exemplars::default();
        // Kept, emptied: the next interval's steps reuse them.
        self.step_exemplars.fill_with(Exemplars::default);
        self.scheduled = 0;
        self.dropped = 0;
        self.status.fill(0);
        self.grpc = [0; GRPC_CODES];
        // Kept, emptied: the next interval's streaming calls reuse its histograms.
        if let Some(m) = &mut self.messages {
            m.reset();
        }
        self.errors = [0; ErrorKind::COUNT];
        self.error_examples = Default::default();
        self.tls_session = None;
        self.bytes_in = 0;
        self.bytes_out = 0;
        self.bytes_decoded = 0;
        self.connections_opened = 0;
        self.server_closes = 0;
        self.resent = 0;
        self.tls_resumed = 0;
        self.kernel_stamped = 0;
        self.wakeups = 0;
        // Rows stay, emptied: their histograms are reused by the next interval.
        self.steps.iter_mut().for_each(StepRow::reset);
        self.checks.fill(CheckCounts::default());
        self.metrics.iter_mut().for_each(MetricRow::reset);
        self.iterations = 0;
        // Kept, emptied: the next interval's requests reuse the rows.
        if let Some(routes) = &mut self.routes {
            routes.reset();
        }
        self.held = None;
        self.quic = None;
        // Kept, emptied: the next interval's responses reuse the rows.
        if let Some(times) = &mut self.server_times {
            times.reset();
        }
    }

    /// Records one request of step `step` (a scripted user's), besides [`Recorder::record`]
    /// which counts it in the run's totals; `failed` is the user's verdict on it.
    pub fn record_step(&mut self, step: usize, sample: &Sample, failed: bool) {
        row_mut(&mut self.steps, step).record(sample, failed);
        self.exemplars.name_step(sample, step);
        // Only a complete response is a step's exemplar: a failed one leaves the list as it
        // was, so that a recording and the merge of its shards hold the same lists.
        if matches!(sample.outcome, Outcome::Error(_)) {
            return;
        }
        if self.step_exemplars.len() <= step {
            self.step_exemplars
                .resize_with(step + 1, Exemplars::default);
        }
        self.step_exemplars[step].offer_step(sample, step);
    }

    /// Step `step`'s slowest complete responses, slowest first (empty for a step without
    /// any, or a run without steps).
    pub fn step_exemplars(&self, step: usize) -> &[crate::Exemplar] {
        self.step_exemplars.get(step).map_or(&[], Exemplars::all)
    }

    /// The slowest complete responses recorded, slowest first (see [`Exemplars`]).
    pub fn exemplars(&self) -> &[crate::Exemplar] {
        self.exemplars.all()
    }

    /// Re-dates the slowest responses kept: `at` gives each its intended start (µs since
    /// the Unix epoch). For recordings whose clock is known to be off, and for fixtures that
    /// must read the same whenever they are made.
    pub fn redate_exemplars(&mut self, mut at: impl FnMut(&crate::Exemplar) -> u64) {
        self.exemplars.redate(&mut at);
        for step in &mut self.step_exemplars {
            step.redate(&mut at);
        }
    }

    /// Counts `count` requests of step `step` that ended without a sample each (abandoned in
    /// flight when the run stopped): they are the step's requests and its failures.
    pub fn record_step_errors(&mut self, step: usize, count: u64) {
        let row = row_mut(&mut self.steps, step);
        row.counts.requests += count;
        row.counts.failures += count;
    }

    /// Counts one evaluation of check `check`.
    pub fn record_check(&mut self, check: usize, passed: bool) {
        let counts = row_mut(&mut self.checks, check);
        if passed {
            counts.passed += 1;
        } else {
            counts.failed += 1;
        }
    }

    /// Counts one completed iteration of a scripted user.
    pub fn record_iteration(&mut self) {
        self.iterations += 1;
    }

    /// Per-step rows, indexed by step number (empty for runs without scripted users; a step
    /// that never ran may be missing from the end).
    pub fn steps(&self) -> &[StepRow] {
        &self.steps
    }

    /// Per-check counts, indexed by check number (empty without checks).
    pub fn checks(&self) -> &[CheckCounts] {
        &self.checks
    }

    /// Custom counter `metric` grows by `n`.
    pub fn record_count(&mut self, metric: usize, n: u64) {
        row_mut(&mut self.metrics, metric).add(n);
    }

    /// Custom trend `metric` takes a value, in microseconds.
    pub fn record_value(&mut self, metric: usize, us: u64) {
        row_mut(&mut self.metrics, metric).record_us(us);
    }

    /// Custom metrics, indexed by metric number (empty without them).
    pub fn metrics(&self) -> &[MetricRow] {
        &self.metrics
    }

    /// Adds the values of a stored trend histogram to metric `metric`'s (results files; its
    /// count comes with [`Recorder::from_counters`]).
    pub fn add_metric_histogram(
        &mut self,
        metric: usize,
        h: &Histogram<u64>,
    ) -> Result<(), RestoreError> {
        row_mut(&mut self.metrics, metric).add_values(h)
    }

    /// Iterations completed by scripted users.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// Adds the values of a stored latency histogram to step `step`'s (results files; the
    /// step's counters come with [`Recorder::from_counters`]).
    pub fn add_step_histogram(
        &mut self,
        step: usize,
        h: &Histogram<u64>,
    ) -> Result<(), RestoreError> {
        row_mut(&mut self.steps, step).add_values(h)
    }

    /// Requests recorded: complete responses plus every error kind.
    pub fn requests(&self) -> u64 {
        self.responses() + self.errors()
    }

    /// Requests that ended in a complete response, whatever its status (gRPC calls with
    /// theirs among them).
    pub fn responses(&self) -> u64 {
        self.status.iter().sum::<u64>() + self.grpc.iter().sum::<u64>()
    }

    /// Responses whose status is below 400 (informational, success and redirection), and gRPC
    /// calls whose status is OK.
    pub fn succeeded(&self) -> u64 {
        self.status[..400].iter().sum::<u64>() + self.grpc[0]
    }

    /// Requests that failed without a complete response, all kinds together.
    pub fn errors(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Requests that failed with `kind`.
    pub fn errors_of(&self, kind: ErrorKind) -> u64 {
        self.errors[kind.index()]
    }

    /// The first message seen for `kind`, if any.
    pub fn error_example(&self, kind: ErrorKind) -> Option<&str> {
        self.error_examples[kind.index()].as_deref()
    }

    /// Non-zero status counts in ascending code order. Code 0 collects codes outside 0..1000.
    pub fn status_counts(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.status
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
    }

    /// gRPC calls by status code (0 is OK), non-zero counts in ascending code order.
    pub fn grpc_counts(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.grpc
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code as u8, n))
    }

    /// Wire bytes read.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Wire bytes written.
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// Counts response body bytes after content decoding (`--compressed`).
    pub fn record_decoded(&mut self, bytes: u64) {
        self.bytes_decoded += bytes;
    }

    /// Response body bytes after content decoding; counted only with `--compressed` (0
    /// otherwise).
    pub fn bytes_decoded(&self) -> u64 {
        self.bytes_decoded
    }

    /// TCP connections opened.
    pub fn connections_opened(&self) -> u64 {
        self.connections_opened
    }

    /// The latency histogram (microseconds from intended start to completion, responses only).
    pub fn latency_us(&self) -> &Histogram<u64> {
        self.histogram(Metric::Latency)
    }

    /// Latency from dispatch instead of from the intended start (responses only): what a
    /// generator with coordinated omission would report.
    pub fn uncorrected_us(&self) -> &Histogram<u64> {
        self.histogram(Metric::Uncorrected)
    }

    /// Scheduling lag of every dispatched request, microseconds.
    pub fn lag_us(&self) -> &Histogram<u64> {
        self.histogram(Metric::Lag)
    }

    /// Arrivals that came due (open loop; 0 in the closed loop).
    pub fn scheduled(&self) -> u64 {
        self.scheduled
    }

    /// Arrivals never sent because the in-flight cap was reached.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The histogram of `metric` (an empty one when nothing was recorded in it).
    pub fn histogram(&self, metric: Metric) -> &Histogram<u64> {
        match &self.histograms[metric.index()] {
            Some(h) => h,
            None => empty_histogram(metric),
        }
    }

    /// The histogram of `metric`, made now if it had no value yet.
    fn histogram_mut(&mut self, metric: Metric) -> &mut Histogram<u64> {
        self.histograms[metric.index()]
            .get_or_insert_with(|| Box::new(new_histogram(metric.sigfig())))
    }

    /// Adds `other`'s histograms to this one's (making only those `other` has values in).
    fn add_histograms(&mut self, other: &Recorder) {
        for m in Metric::ALL {
            if let Some(theirs) = &other.histograms[m.index()] {
                // Same bounds on both sides by construction, so `add` cannot fail.
                self.histogram_mut(m)
                    .add(theirs.as_ref())
                    .expect("recorders share histogram bounds");
            }
        }
    }

    /// Summary statistics of the latency histogram.
    pub fn latency_summary(&self) -> LatencySummary {
        self.summary(Metric::Latency)
    }

    /// Summary statistics of `metric`, its min and max the exact values recorded (the
    /// histogram's are its buckets' edges) and its percentiles kept within them.
    pub fn summary(&self, metric: Metric) -> LatencySummary {
        LatencySummary::of(self.histogram(metric)).within(self.range(metric))
    }

    /// The exact smallest and largest value of `metric`, if any was recorded.
    pub fn range(&self, metric: Metric) -> Option<Range> {
        self.extremes.of(metric)
    }
}

/// The empty histogram of `metric`'s number of figures, for a recorder that has none.
fn empty_histogram(metric: Metric) -> &'static Histogram<u64> {
    static PRECISE: OnceLock<Histogram<u64>> = OnceLock::new();
    static DIAGNOSTIC: OnceLock<Histogram<u64>> = OnceLock::new();
    let cell = match metric.sigfig() {
        HISTOGRAM_SIGFIG => &PRECISE,
        _ => &DIAGNOSTIC,
    };
    cell.get_or_init(|| new_histogram(metric.sigfig()))
}

#[cfg(test)]
mod tests;
