//! The figures of a report, worked out once from the recorded results: rates, shares, latency
//! summaries, the verdict and the per-step tables. Every format renders a [`Summary`] and
//! computes none of them itself, so a figure reads the same in text, Markdown, JSON and HTML;
//! adding one means adding it here and to the renderers that show it.

use belier_stats::{ErrorKind, LatencySummary, MessageCounts, Messages, Metric};

use crate::open_loop::OpenLoop;
use crate::steps::{self, CheckLine, StepLine};
use crate::verdict::{self, Verdict};
use crate::{per_second, ratio, Report};

/// The phases of a request, in the order the reports show them.
pub(crate) const PHASES: [Metric; 4] =
    [Metric::Connect, Metric::Tls, Metric::Ttfb, Metric::Transfer];

/// A report's figures. The counters themselves are read from `report.totals`: they need no
/// working out.
#[derive(Debug)]
pub(crate) struct Summary<'a> {
    /// The report summarised.
    pub report: &'a Report<'a>,
    /// Requests per second issued, whatever their outcome.
    pub attempted_rate: f64,
    /// Successful responses per second.
    pub throughput: f64,
    /// Share of requests that succeeded, 0..=1 (1 when nothing was sent).
    pub success_ratio: f64,
    /// Bytes received and sent per request (0 when nothing was sent).
    pub bytes_in_per_request: f64,
    pub bytes_out_per_request: f64,
    /// Most connections open at once in any interval.
    pub connections_peak: u64,
    /// Share of requests re-sent after the server closed their connection unread, 0..=1.
    pub resent_share: f64,
    /// Latency from the intended start (responses).
    pub latency: LatencySummary,
    /// Latency from dispatch: what a tool with coordinated omission would report.
    pub uncorrected: LatencySummary,
    /// Each of [`PHASES`] with its summary (a count of 0 when no request went through it).
    pub phases: [(Metric, LatencySummary); 4],
    /// The open loop's figures; `None` in a closed loop.
    pub open_loop: Option<OpenLoop>,
    /// Error kinds that happened, in [`ErrorKind::ALL`]'s order.
    pub errors: Vec<ErrorLine<'a>>,
    /// Whether the generator kept up.
    pub verdict: Verdict,
    /// Whether the run had scripted users, and so step and check tables to show.
    pub has_steps: bool,
    /// Whether the steps are a targets run's targets (`--targets`): the step table is then
    /// the per-target table.
    pub has_targets: bool,
    /// The per-step and per-check tables (empty without scripted users).
    pub steps: Vec<StepLine>,
    pub checks: Vec<CheckLine>,
    /// The custom-metrics table (empty without scripts that count).
    pub metrics: Vec<crate::custom::MetricLine>,
    /// Completed iterations per second over the run.
    pub iteration_rate: f64,
    /// Streaming gRPC calls' messages; `None` for any other run.
    pub messages: Option<MessageFigures>,
}

/// The messages of a run's streaming gRPC calls.
#[derive(Debug)]
pub(crate) struct MessageFigures {
    pub counts: MessageCounts,
    /// Messages each way per streaming call.
    pub sent_per_call: f64,
    pub received_per_call: f64,
    /// Messages each way per second of the run.
    pub sent_rate: f64,
    pub received_rate: f64,
    /// From a call's send to its first response message.
    pub first: LatencySummary,
    /// Between a call's consecutive response messages.
    pub gaps: LatencySummary,
    /// From a request message to the response message that answered it.
    pub round_trips: LatencySummary,
    /// The same round trips from each message's actual send (WebSocket runs).
    pub round_trips_sent: LatencySummary,
    /// LLM streams: output tokens per second of the run, and per second of a stream once its
    /// first token came (its tokens after the first over the time from first to last token,
    /// summed over streams).
    pub token_rate: f64,
    pub tokens_per_stream_rate: f64,
    /// WebSocket sockets by the close code they ended with, by code.
    pub closes: Vec<(u16, u64)>,
    /// SSE reconnections' mean wait, from the end of the stream before each to its start,
    /// microseconds (0 without any).
    pub reconnection_wait_mean_us: f64,
    /// WebSocket sockets that offered permessage-deflate by what they agreed: its
    /// parameters, or `declined`.
    pub extensions: Vec<(String, u64)>,
}

impl MessageFigures {
    fn of(m: &Messages, elapsed: std::time::Duration) -> MessageFigures {
        let counts = m.counts();
        let per_call = |n: u64| ratio(n, counts.calls).unwrap_or(0.0);
        MessageFigures {
            counts,
            sent_per_call: per_call(counts.sent),
            received_per_call: per_call(counts.received),
            sent_rate: per_second(counts.sent, elapsed),
            received_rate: per_second(counts.received, elapsed),
            first: m.first_message(),
            gaps: m.gaps(),
            round_trips: m.round_trips(),
            round_trips_sent: m.round_trips_sent(),
            token_rate: per_second(counts.tokens, elapsed),
            tokens_per_stream_rate: match counts.generation_us {
                0 => 0.0,
                us => counts.generated_tokens as f64 / (us as f64 / 1e6),
            },
            closes: m.closes().iter().map(|(&code, &n)| (code, n)).collect(),
            reconnection_wait_mean_us: ratio(counts.reconnection_wait_us, counts.reconnections)
                .unwrap_or(0.0),
            extensions: m
                .extensions()
                .iter()
                .map(|(e, &n)| (e.clone(), n))
                .collect(),
        }
    }
}

/// One kind of error and how often it happened.
#[derive(Debug)]
pub(crate) struct ErrorLine<'a> {
    pub kind: ErrorKind,
    pub count: u64,
    /// Share of all requests, 0..=1.
    pub share: f64,
    /// One of its messages, as recorded.
    pub example: Option<&'a str>,
}

impl<'a> Summary<'a> {
    /// Works out every figure of `report`.
    pub(crate) fn of(report: &'a Report<'a>) -> Summary<'a> {
        let t = report.totals;
        let requests = t.requests();
        let per_request = |b: u64| ratio(b, requests).unwrap_or(0.0);
        let errors = ErrorKind::ALL
            .into_iter()
            .filter(|&kind| t.errors_of(kind) > 0)
            .map(|kind| ErrorLine {
                kind,
                count: t.errors_of(kind),
                share: t.errors_of(kind) as f64 / requests.max(1) as f64,
                example: t.error_example(kind),
            })
            .collect();
        let open_loop = OpenLoop::of(report);
        Summary {
            report,
            attempted_rate: report.attempted_rate(),
            throughput: report.throughput(),
            success_ratio: report.success_ratio(),
            bytes_in_per_request: per_request(t.bytes_in()),
            bytes_out_per_request: per_request(t.bytes_out()),
            connections_peak: report.connections_peak(),
            resent_share: ratio(t.resent(), requests).unwrap_or(0.0),
            latency: t.latency_summary(),
            uncorrected: t.summary(Metric::Uncorrected),
            phases: PHASES.map(|m| (m, t.summary(m))),
            verdict: verdict::judge(report, open_loop.as_ref()),
            open_loop,
            errors,
            has_steps: steps::has_steps(report),
            has_targets: !report.info.targets.is_empty(),
            steps: steps::step_lines(report),
            checks: steps::check_lines(report),
            metrics: crate::custom::metric_lines(report),
            iteration_rate: per_second(t.iterations(), report.elapsed),
            messages: t.messages().map(|m| MessageFigures::of(m, report.elapsed)),
        }
    }

    /// The line of errors of `kind`, if any happened.
    pub(crate) fn error(&self, kind: ErrorKind) -> Option<&ErrorLine<'a>> {
        self.errors.iter().find(|e| e.kind == kind)
    }
}
