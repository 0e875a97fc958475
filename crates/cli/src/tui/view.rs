//! Drawing the dashboard from a [`Snapshot`]: what was settled so far and the steering state.
//! Pure over its input, so a test draws it on ratatui's `TestBackend`.

use std::time::Duration;

use belier_engine::Steer;
use belier_stats::{value_at_percentile, ErrorKind, MessageUnit, Point, Recorder};
use belier_vocabulary::format::thousands;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Chart, Clear, Dataset, GraphType, LegendPosition, Paragraph, Row, Table, Wrap,
};
use ratatui::Frame;

/// Smallest terminal the dashboard draws in; below it belier keeps the progress line.
pub const MIN_WIDTH: u16 = 60;
/// See [`MIN_WIDTH`].
pub const MIN_HEIGHT: u16 = 16;
/// Most intervals a chart shows (two minutes of one-second intervals).
const MAX_CHART_POINTS: usize = 120;

/// What the steered level counts: the web console's unit, shown here in words.
pub use belier_console::Unit;

/// A level with its unit, in words.
pub trait Show {
    /// `level` with its unit: "55.0/s", "12 users".
    fn show(self, level: f64) -> String;
    /// `level` with a short unit, for a narrow panel: "55.0/s", "4 conns".
    fn short(self, level: f64) -> String;
}

impl Show for Unit {
    fn show(self, level: f64) -> String {
        match self {
            Unit::Rate => format!("{level:.1}/s"),
            Unit::Iterations => format!("{level:.1} iterations/s"),
            Unit::Connections => format!("{level:.0} connections"),
            Unit::Users => format!("{level:.0} users"),
        }
    }

    fn short(self, level: f64) -> String {
        match self {
            Unit::Rate => format!("{level:.1}/s"),
            Unit::Iterations => format!("{level:.1} it/s"),
            Unit::Connections => format!("{level:.0} conns"),
            Unit::Users => format!("{level:.0} users"),
        }
    }
}

/// Everything one frame shows.
pub struct Snapshot<'a> {
    /// Time since the start.
    pub elapsed: Duration,
    /// The schedule's length, if it has one.
    pub planned: Option<Duration>,
    /// Settled intervals, oldest first.
    pub points: &'a [Point],
    /// Everything in the settled intervals.
    pub settled: &'a Recorder,
    /// Requests recorded so far, settled or not.
    pub requests: u64,
    /// Of those, failed.
    pub errors: u64,
    /// The steering state.
    pub steer: Steer,
    /// What the level counts.
    pub unit: Unit,
    /// A plan's request step names (empty otherwise).
    pub steps: &'a [String],
    /// Whether a stop was asked for.
    pub stopping: bool,
    /// The answer to the last key, if any.
    pub notice: Option<&'a str>,
    /// Whether the help overlay is shown.
    pub help: bool,
    /// The workers of a distributed run, whose merged intervals these are (0: the run is
    /// this process's own).
    pub workers: usize,
}

/// Draws `s` on `frame`.
pub fn draw(frame: &mut Frame, s: &Snapshot) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "terminal too small ({}×{}): the dashboard needs {MIN_WIDTH}×{MIN_HEIGHT}. q stops.",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let steps_height = if s.steps.is_empty() || area.height < 30 {
        0
    } else {
        (s.steps.len() as u16 + 3).min(8)
    };
    let [header, charts, steps, panels, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length(steps_height),
        Constraint::Length(7),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header_line(s)), header);
    let [rate, latency] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(charts);
    let window = window(s.points, rate.width);
    draw_rate(frame, rate, window, s.unit);
    draw_latency(frame, latency, window);
    if steps_height > 0 {
        draw_steps(frame, steps, s);
    }
    draw_panels(frame, panels, s);
    let help = " q stop   p pause/resume   + / - level ±10 %   ? help";
    frame.render_widget(
        Paragraph::new(help).style(Style::default().add_modifier(Modifier::DIM)),
        keys,
    );
    if s.help {
        draw_help(frame, area);
    }
}

/// The panels under the charts: responses, load, generator, and for a run of streaming gRPC
/// calls their messages, for a run that reads the server's own time that time (only then, so
/// any other run's panels are as they were).
fn draw_panels(frame: &mut Frame, area: Rect, s: &Snapshot) {
    let messages = message_lines(s);
    let server = server_lines(s.settled);
    let widths: &[u16] = match (&messages, &server) {
        (Some(_), Some(_)) => &[24, 18, 20, 20, 18],
        (Some(_), None) | (None, Some(_)) => &[30, 22, 26, 22],
        (None, None) => &[40, 30, 30],
    };
    let areas = Layout::horizontal(widths.iter().map(|&w| Constraint::Percentage(w))).split(area);
    let mut panels = vec![
        (" Responses ", response_lines(s.settled)),
        (" Load ", load_lines(s)),
    ];
    let title = match s.settled.messages().map(|m| m.unit()) {
        Some(MessageUnit::WebSocket) => " WebSocket ",
        Some(MessageUnit::Events) => " Events ",
        Some(MessageUnit::Chunks) => " Chunks ",
        Some(MessageUnit::Tokens) => " Tokens ",
        _ => " Messages ",
    };
    panels.extend(messages.map(|lines| (title, lines)));
    panels.extend(server.map(|lines| (" Server timing ", lines)));
    panels.push((" Generator ", generator_lines(s.points.last())));
    for ((title, lines), &panel) in panels.into_iter().zip(areas.iter()) {
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(title)),
            panel,
        );
    }
}

/// A run's messages so far (streaming gRPC calls', WebSockets', streamed bodies'), each way, and their rate over the settled
/// intervals, and the SSE reconnections when there were any; `None` for any other run.
fn message_lines(s: &Snapshot) -> Option<Vec<Line<'static>>> {
    let m = s.settled.messages()?;
    let settled = s
        .points
        .last()
        .map_or(0.0, |p| (p.offset + p.width).as_secs_f64());
    let per_s = |n: u64| {
        if settled > 0.0 {
            n as f64 / settled
        } else {
            0.0
        }
    };
    // Compact: the panel is a quarter of the width, as little as 22 columns.
    let line = |what: &str, n: u64| {
        let rate = thousands(per_s(n).round() as u64);
        Line::raw(format!("{what:<5}{:>8} {rate:>7}/s", thousands(n)))
    };
    let what = match m.unit() {
        MessageUnit::Grpc => "calls",
        MessageUnit::WebSocket => "sockets",
        _ => "streams",
    };
    let mut lines = vec![
        line("in", m.received()),
        line("out", m.sent()),
        Line::raw(format!("{what:<7}{:>6}", thousands(m.calls()))),
    ];
    // SSE streams sent as a reconnection (`--sse-reconnect`).
    let reconnections = m.counts().reconnections;
    if reconnections > 0 {
        lines.push(Line::raw(format!(
            "{:<7}{:>6}",
            "recon",
            thousands(reconnections)
        )));
    }
    Some(lines)
}

/// The server's own time so far (`--server-timing`): p99 of the server's time and of the time
/// outside it, and the responses timed and not; `None` for a run that does not read it.
fn server_lines(settled: &Recorder) -> Option<Vec<Line<'static>>> {
    let times = settled.server_times()?;
    // Compact: the panel is a fifth of the width at the least, some 20 columns.
    let p99 = |what: &str, row: &belier_stats::FigureRow| {
        let ms = match row.counts.figures {
            0 => "–".to_string(),
            _ => format!(
                "{:.1}",
                value_at_percentile(row.values_us(), 99.0) as f64 / 1e3
            ),
        };
        Line::raw(format!("{what:<8}p99 {ms:>6} ms"))
    };
    let c = times.counts;
    Some(vec![
        p99("server", &times.server),
        p99("outside", &times.outside),
        Line::raw(format!("timed {:>8}", thousands(c.timed))),
        Line::raw(format!("none  {:>8}", thousands(c.missing + c.malformed))),
    ])
}

/// State, time, the target and the totals so far.
fn header_line(s: &Snapshot) -> Line<'static> {
    let (state, colour) = if s.stopping {
        ("STOPPING", Color::Red)
    } else if s.steer.paused {
        ("PAUSED", Color::Yellow)
    } else {
        ("RUNNING", Color::Green)
    };
    let secs = s.elapsed.as_secs_f64();
    let time = match s.planned {
        Some(d) => format!("{secs:.1}s / {:.1}s", d.as_secs_f64()),
        None => format!("{secs:.1}s"),
    };
    let target = s.unit.show(s.steer.level);
    let mut spans = vec![
        Span::styled(" belier ", Style::default().add_modifier(Modifier::BOLD)),
        Span::styled(
            format!(" {state} "),
            Style::default().fg(Color::Black).bg(colour),
        ),
        Span::raw(format!("  {time}  target {target}  ")),
        Span::raw(format!("{} requests  {} errors", s.requests, s.errors)),
    ];
    if s.workers > 0 {
        spans.push(Span::raw(format!("  over {} workers", s.workers)));
    }
    if let Some(n) = s.notice {
        spans.push(Span::styled(
            format!("  {n}"),
            Style::default().fg(Color::Yellow),
        ));
    }
    Line::from(spans)
}

/// The latest points, as many as a chart `width` cells wide shows well.
fn window(points: &[Point], width: u16) -> &[Point] {
    let n = (usize::from(width) * 2).min(MAX_CHART_POINTS);
    &points[points.len().saturating_sub(n)..]
}

/// The x axis of a chart over `window`: seconds since the start.
fn time_axis(window: &[Point]) -> Axis<'static> {
    let first = window.first().map_or(0.0, |p| p.offset.as_secs_f64());
    let last = window
        .last()
        .map_or(1.0, |p| (p.offset + p.width).as_secs_f64())
        .max(first + 1.0);
    Axis::default()
        .bounds([first, last])
        .labels([format!("{first:.0}s"), format!("{last:.0}s")])
        .style(Style::default().fg(Color::Gray))
}

/// A y axis from zero to a little above `top`.
fn value_axis(top: f64, unit: &str) -> Axis<'static> {
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    Axis::default()
        .bounds([0.0, top])
        .labels(["0".to_string(), format!("{top:.1}{unit}")])
        .style(Style::default().fg(Color::Gray))
}

fn line_dataset<'a>(name: &'a str, colour: Color, data: &'a [(f64, f64)]) -> Dataset<'a> {
    Dataset::default()
        .name(name)
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::default().fg(colour))
        .data(data)
}

/// Achieved requests per second, and in an open loop the target rate beside it.
fn draw_rate(frame: &mut Frame, area: Rect, window: &[Point], unit: Unit) {
    let mid = |p: &Point| (p.offset + p.width / 2).as_secs_f64();
    let achieved: Vec<(f64, f64)> = window.iter().map(|p| (mid(p), p.rate())).collect();
    let target: Vec<(f64, f64)> = window.iter().map(|p| (mid(p), p.target_rate())).collect();
    let top = achieved
        .iter()
        .chain(&target)
        .map(|&(_, y)| y)
        .fold(0.0, f64::max);
    let mut datasets = vec![line_dataset("achieved", Color::Cyan, &achieved)];
    if unit.is_rate() {
        let name = if unit == Unit::Iterations {
            "iterations due"
        } else {
            "target"
        };
        datasets.push(line_dataset(name, Color::Magenta, &target));
    }
    let chart = Chart::new(datasets)
        .block(Block::bordered().title(" Requests/s "))
        .x_axis(time_axis(window))
        .y_axis(value_axis(top, ""))
        .legend_position(Some(LegendPosition::TopLeft));
    frame.render_widget(chart, area);
}

/// Latency percentiles per interval, in milliseconds.
fn draw_latency(frame: &mut Frame, area: Rect, window: &[Point]) {
    let series = |at: fn(&Point) -> u64| -> Vec<(f64, f64)> {
        window
            .iter()
            .map(|p| {
                (
                    (p.offset + p.width / 2).as_secs_f64(),
                    at(p) as f64 / 1000.0,
                )
            })
            .collect()
    };
    let p50 = series(|p| p.p50_us);
    let p90 = series(|p| p.p90_us);
    let p99 = series(|p| p.p99_us);
    let top = p99.iter().map(|&(_, y)| y).fold(0.0, f64::max);
    let chart = Chart::new(vec![
        line_dataset("p50", Color::Green, &p50),
        line_dataset("p90", Color::Yellow, &p90),
        line_dataset("p99", Color::Red, &p99),
    ])
    .block(Block::bordered().title(" Latency (ms) "))
    .x_axis(time_axis(window))
    .y_axis(value_axis(top, "ms"))
    .legend_position(Some(LegendPosition::TopLeft));
    frame.render_widget(chart, area);
}

/// A plan's steps: requests, failures and latency so far.
fn draw_steps(frame: &mut Frame, area: Rect, s: &Snapshot) {
    let rows = s.steps.iter().enumerate().map(|(i, name)| {
        let (requests, failures, p50, p99) = match s.settled.steps().get(i) {
            Some(row) => {
                let h = row.values_us();
                let at = |q| {
                    if h.is_empty() {
                        "-".to_string()
                    } else {
                        ms(h.value_at_quantile(q))
                    }
                };
                (row.counts.requests, row.counts.failures, at(0.5), at(0.99))
            }
            None => (0, 0, "-".into(), "-".into()),
        };
        Row::new([
            name.clone(),
            requests.to_string(),
            failures.to_string(),
            p50,
            p99,
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Fill(1),
            Constraint::Length(10),
            Constraint::Length(9),
            Constraint::Length(10),
            Constraint::Length(10),
        ],
    )
    .header(
        Row::new(["step", "requests", "failed", "p50", "p99"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" Steps "));
    frame.render_widget(table, area);
}

/// Status codes and error kinds so far, most frequent first.
fn response_lines(settled: &Recorder) -> Vec<Line<'static>> {
    let mut counts: Vec<(String, u64, Color)> = settled
        .status_counts()
        .map(|(code, n)| {
            let colour = if code < 400 { Color::Green } else { Color::Red };
            (code.to_string(), n, colour)
        })
        .collect();
    counts.extend(settled.grpc_counts().map(|(code, n)| {
        let colour = if code == 0 { Color::Green } else { Color::Red };
        (belier_stats::grpc_code_name(code).to_string(), n, colour)
    }));
    counts.extend(
        ErrorKind::ALL
            .into_iter()
            .map(|k| (k.name().to_string(), settled.errors_of(k), Color::Red))
            .filter(|&(_, n, _)| n > 0),
    );
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    if counts.is_empty() {
        return vec![Line::raw("none yet")];
    }
    counts
        .into_iter()
        .map(|(what, n, colour)| {
            Line::from(vec![
                Span::styled(format!("{what:<14}"), Style::default().fg(colour)),
                Span::raw(format!("{n:>10}")),
            ])
        })
        .collect()
}

/// The level, connections and in-flight requests of the latest interval.
fn load_lines(s: &Snapshot) -> Vec<Line<'static>> {
    let mut lines = vec![Line::raw(format!(
        "target      {}",
        s.unit.short(s.steer.level)
    ))];
    if let Some(p) = s.points.last() {
        lines.push(Line::raw(format!("connections {}", p.connections_peak)));
        if s.settled.held().is_some() {
            lines.push(Line::raw(format!("held        {}", p.held)));
        }
        lines.push(Line::raw(format!("in flight   {}", p.in_flight)));
        if s.unit.is_rate() {
            lines.push(Line::raw(format!("dropped     {}", s.settled.dropped())));
        }
    }
    // HTTP/3: the packets QUIC lost so far, which delay requests but fail none.
    if let Some(q) = s.settled.quic() {
        lines.push(Line::raw(format!(
            "QUIC lost   {} of {} packets",
            q.packets_lost, q.packets_sent
        )));
    }
    lines
}

/// The generator's own health in the latest interval: is it keeping up?
fn generator_lines(latest: Option<&Point>) -> Vec<Line<'static>> {
    let Some(p) = latest else {
        return vec![Line::raw("first interval…")];
    };
    let cpu = p.cpu * 100.0;
    let busy = if cpu >= 90.0 {
        Color::Red
    } else {
        Color::Reset
    };
    vec![
        Line::raw(format!("lag p99     {}", ms(p.lag_p99_us))),
        // The busiest worker thread's share of a core: the one that limits the run.
        Line::styled(format!("worker CPU  {cpu:.0} %"), Style::default().fg(busy)),
    ]
}

// Microseconds as milliseconds, two decimals.
use belier_vocabulary::format::ms_2 as ms;

fn draw_help(frame: &mut Frame, area: Rect) {
    let text = vec![
        Line::raw("q, Ctrl-C   stop the run; the report follows"),
        Line::raw("p, space    pause / resume"),
        Line::raw("+, ↑        raise the rate or users by 10 %"),
        Line::raw("-, ↓        lower the rate or users by 10 %"),
        Line::raw("?, h, Esc   show / hide this help"),
        Line::raw(""),
        Line::raw("Charts show settled intervals; the target is"),
        Line::raw("what the run holds now (a pause keeps it)."),
    ];
    let width = 52.min(area.width);
    let height = (text.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text).block(Block::bordered().title(" Keys ")),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use belier_engine::Knob;
    use belier_stats::Gauges;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;

    fn screen(width: u16, height: u16, s: &Snapshot) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| draw(f, s)).unwrap();
        let buffer = terminal.backend().buffer();
        buffer
            .content()
            .chunks(usize::from(width))
            .map(|row| row.iter().map(|c| c.symbol()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn snapshot<'a>(points: &'a [Point], settled: &'a Recorder) -> Snapshot<'a> {
        Snapshot {
            elapsed: Duration::from_millis(3500),
            planned: Some(Duration::from_secs(8)),
            points,
            settled,
            requests: 175,
            errors: 0,
            steer: Steer {
                knob: Knob::Rate,
                level: 55.0,
                paused: false,
                changes: 1,
            },
            unit: Unit::Rate,
            steps: &[],
            stopping: false,
            notice: None,
            help: false,
            workers: 0,
        }
    }

    /// `n` settled intervals of a second, each with `settled`'s figures.
    fn seconds(settled: &Recorder, n: u64) -> Vec<Point> {
        (0..n)
            .map(|i| {
                Point::of(
                    settled,
                    Gauges::default(),
                    Duration::from_secs(i),
                    Duration::from_secs(1),
                )
            })
            .collect()
    }

    #[test]
    fn grpc_calls_are_listed_by_their_codes_name_ok_in_green() {
        let mut settled = Recorder::new();
        for code in [0, 0, 8] {
            let now = std::time::Instant::now();
            let outcome = belier_stats::Outcome::Grpc { code };
            settled.record(&belier_stats::Sample::simulated(now, 0, 1_000, outcome));
        }
        let lines: Vec<(String, Option<Color>)> = response_lines(&settled)
            .into_iter()
            .map(|l| (l.to_string(), l.spans.iter().find_map(|s| s.style.fg)))
            .collect();
        assert!(
            lines[0].0.contains("OK") && lines[0].0.contains('2'),
            "{lines:?}"
        );
        assert_eq!(lines[0].1, Some(Color::Green), "{lines:?}");
        assert!(lines[1].0.contains("RESOURCE_EXHAUSTED"), "{lines:?}");
        assert_eq!(lines[1].1, Some(Color::Red), "{lines:?}");
    }

    #[test]
    fn an_http3_run_shows_the_packets_quic_lost() {
        let mut settled = Recorder::new();
        let points = seconds(&settled, 3);
        assert!(!screen(120, 40, &snapshot(&points, &settled)).contains("QUIC"));
        settled.record_quic(&belier_stats::Quic {
            packets_sent: 4_000,
            packets_lost: 3,
            ..belier_stats::Quic::default()
        });
        let text = screen(120, 40, &snapshot(&points, &settled));
        assert!(text.contains("QUIC lost   3 of 4000 packets"), "{text}");
    }

    #[test]
    fn the_panels_and_the_target_are_drawn() {
        let settled = Recorder::new();
        let points = seconds(&settled, 3);
        let s = snapshot(&points, &settled);
        let text = screen(120, 40, &s);
        for want in [
            "RUNNING",
            "3.5s / 8.0s",
            "target 55.0/s",
            "Requests/s",
            "Latency (ms)",
            "Responses",
            "Generator",
            "q stop",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        assert!(!text.contains("workers"), "{text}");
        assert!(!text.contains("Messages"), "no streaming calls: {text}");
        let spread = screen(
            120,
            40,
            &Snapshot {
                workers: 2,
                ..snapshot(&points, &settled)
            },
        );
        assert!(
            spread.contains("175 requests  0 errors  over 2 workers"),
            "{spread}"
        );
        let help = screen(120, 40, &Snapshot { help: true, ..s });
        assert!(help.contains("pause / resume"), "{help}");
        let small = screen(50, 10, &snapshot(&points, &settled));
        assert!(small.contains("terminal too small"), "{small}");
    }

    #[test]
    fn a_run_of_streaming_calls_has_a_messages_panel_with_counts_and_rates() {
        let mut settled = Recorder::new();
        let gaps = belier_stats::MessageTimes::default();
        for _ in 0..40 {
            let call = belier_stats::CallMessages::one_way(1, 100, Some(500), &gaps);
            settled.record_simulated_stream(1_000, &call);
        }
        // Two settled intervals of a second: 4,000 messages in, 2,000/s.
        let points = seconds(&settled, 2);
        let text = screen(120, 40, &snapshot(&points, &settled));
        for want in [
            "Messages",
            "in      4,000   2,000/s",
            "out        40      20/s",
            "calls      40",
            "Responses",
            "Generator",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        // At the narrowest the panels still fit their figures.
        let narrow = screen(MIN_WIDTH, 24, &snapshot(&points, &settled));
        assert!(narrow.contains("4,000"), "{narrow}");
    }

    #[test]
    fn a_websocket_run_s_panel_is_titled_for_its_sockets() {
        let mut settled = Recorder::new();
        let gaps = belier_stats::MessageTimes::default();
        for _ in 0..40 {
            let call = belier_stats::CallMessages::one_way(10, 10, Some(500), &gaps);
            settled.record_socket_messages(&call);
        }
        let points = seconds(&settled, 2);
        let text = screen(120, 40, &snapshot(&points, &settled));
        for want in ["WebSocket", "in        400     200/s", "sockets    40"] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        assert!(!text.contains("calls"), "{text}");
    }

    #[test]
    fn a_run_that_reconnected_its_sse_streams_counts_them_in_its_events_panel() {
        let mut settled = Recorder::new();
        let gaps = belier_stats::MessageTimes::default();
        for i in 0..12 {
            let call = belier_stats::CallMessages::one_way(0, 5, Some(500), &gaps);
            let body = belier_stats::StreamedBody {
                unit: MessageUnit::Events,
                reconnection: (i >= 2).then_some(belier_stats::Reconnection::default()),
                ..belier_stats::StreamedBody::default()
            };
            settled.record_body_stream(&call, &body);
        }
        let points = seconds(&settled, 2);
        let text = screen(120, 40, &snapshot(&points, &settled));
        for want in ["Events", "streams    12", "recon      10"] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
    }

    #[test]
    fn a_run_that_reads_the_servers_time_has_a_panel_for_it() {
        let mut settled = Recorder::new();
        let now = std::time::Instant::now();
        for i in 0..100u64 {
            let ok = belier_stats::Outcome::Response { status: 200 };
            settled.record(&belier_stats::Sample::simulated(now, 0, 30_000, ok));
            let value = (i < 98).then_some(&b"app;dur=10"[..]);
            let header = belier_stats::TimingHeader::ServerTiming;
            settled.record_server_timing(header, value, 30_000);
        }
        let points = seconds(&settled, 2);
        let text = screen(120, 40, &snapshot(&points, &settled));
        for want in [
            "Server timing",
            "server  p99   10.0 ms",
            "outside p99   20.0 ms",
            "timed       98",
            "none         2",
            "Generator",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        let plain = Recorder::new();
        let text = screen(120, 40, &snapshot(&points, &plain));
        assert!(!text.contains("Server timing"), "{text}");
    }
}
