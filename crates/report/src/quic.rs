//! QUIC's own figures (HTTP/3 runs) in each report format: handshakes, what the connections
//! carried as UDP datagrams and the system calls that moved them, the packets the network
//! lost, and why the connections ended. Read from the recorded counts.

use std::collections::BTreeMap;
use std::fmt::Write;

use belier_stats::Quic;
use serde_json::{json, Value};

use crate::format::thousands;
use crate::Report;

/// The run's QUIC figures, when it had QUIC connections.
fn figures<'a>(report: &'a Report<'a>) -> Option<&'a Quic> {
    report.totals.quic()
}

/// Ends as `idle_timeout 3, H3_NO_ERROR 12`.
fn ends(ended: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = ended
        .iter()
        .map(|(cause, n)| format!("{cause} {}", thousands(*n)))
        .collect();
    match parts.is_empty() {
        true => "none".to_string(),
        false => parts.join(", "),
    }
}

/// `n` per system call, to one decimal.
fn per_call(n: u64, calls: u64) -> String {
    match calls {
        0 => "–".to_string(),
        _ => format!("{:.1}", n as f64 / calls as f64),
    }
}

/// The lines every text-like format shows, without their markup.
fn lines(q: &Quic) -> [String; 4] {
    let early = match q.early_accepted + q.early_rejected {
        0 => String::new(),
        _ => format!(
            ", 0-RTT accepted {}, refused {}",
            thousands(q.early_accepted),
            thousands(q.early_rejected)
        ),
    };
    let lost_share = match q.packets_sent {
        0 => 0.0,
        n => q.packets_lost as f64 * 100.0 / n as f64,
    };
    [
        format!(
            "handshakes {}{early} (their times: the connect phase)",
            thousands(q.handshakes)
        ),
        format!(
            "UDP datagrams sent {} in {} system calls ({} a call), received {} in {} ({} a call)",
            thousands(q.datagrams_sent),
            thousands(q.sends),
            per_call(q.datagrams_sent, q.sends),
            thousands(q.datagrams_received),
            thousands(q.receives),
            per_call(q.datagrams_received, q.receives)
        ),
        format!(
            "packets sent {}, lost {} ({lost_share:.3} %, {} bytes, sent again), congestion \
             events {}",
            thousands(q.packets_sent),
            thousands(q.packets_lost),
            thousands(q.bytes_lost),
            thousands(q.congestion_events)
        ),
        format!(
            "connections ended: {} (by the server {})",
            ends(&q.ended),
            thousands(q.ended_by_server())
        ),
    ]
}

/// The text report's "QUIC" section.
pub(crate) fn write_text(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(q) = figures(report) else {
        return Ok(());
    };
    writeln!(out, "\nQUIC  (per connection, apart from the requests)")?;
    for line in lines(q) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// The markdown report's QUIC paragraph.
pub(crate) fn write_markdown(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(q) = figures(report) else {
        return Ok(());
    };
    writeln!(out, "**QUIC**: {}\n", lines(q).join("; "))
}

/// The lines of the run's QUIC figures, without markup, when it had QUIC connections (the
/// HTML report's list).
pub(crate) fn plain_lines(report: &Report) -> Option<[String; 4]> {
    figures(report).map(lines)
}

/// The JSON document's `quic`, present only when the run had QUIC connections.
pub(crate) fn json(report: &Report) -> Option<Value> {
    figures(report).map(|q| {
        json!({
            "handshakes": q.handshakes,
            "early_data": {"accepted": q.early_accepted, "refused": q.early_rejected},
            "datagrams": {
                "sent": q.datagrams_sent,
                "received": q.datagrams_received,
                "send_calls": q.sends,
                "receive_calls": q.receives,
            },
            "packets": {
                "sent": q.packets_sent,
                "lost": q.packets_lost,
                "lost_bytes": q.bytes_lost,
                "congestion_events": q.congestion_events,
            },
            "connections_ended": q.ended,
            "ended_by_server": q.ended_by_server(),
        })
    })
}

#[cfg(test)]
mod tests {
    use belier_stats::{Quic, Recorder};

    use crate::seeded;

    #[test]
    fn quic_figures_show_in_text_markdown_html_and_json() {
        let mut run = seeded::base();
        let mut q = Quic {
            handshakes: 5,
            datagrams_sent: 4_000,
            datagrams_received: 6_000,
            sends: 2_000,
            receives: 1_500,
            packets_sent: 4_100,
            packets_lost: 41,
            bytes_lost: 50_000,
            congestion_events: 2,
            ..Quic::default()
        };
        q.end("idle_timeout");
        q.end("H3_NO_ERROR");
        q.end("H3_NO_ERROR");
        q.end("belier_closed");
        let mut r = Recorder::new();
        r.record_quic(&q);
        run.totals += &r;
        let report = run.report();

        let text = crate::text::render_text(&report);
        assert!(text.contains("QUIC  (per connection"), "{text}");
        assert!(
            text.contains("handshakes 5 (their times: the connect phase)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "sent 4,000 in 2,000 system calls (2.0 a call), received 6,000 in 1,500 \
                 (4.0 a call)"
            ),
            "{text}"
        );
        assert!(text.contains("lost 41 (1.000 %, 50,000 bytes"), "{text}");
        assert!(
            text.contains("H3_NO_ERROR 2, belier_closed 1, idle_timeout 1 (by the server 3)"),
            "{text}"
        );

        let named = [crate::NamedReport {
            name: "run",
            report: &report,
        }];
        let md = crate::render_markdown(&named);
        assert!(
            md.contains(
                "**QUIC**: handshakes 5 (their times: the connect phase); UDP datagrams sent 4,000"
            ),
            "{md}"
        );

        let doc: serde_json::Value = serde_json::from_str(&crate::render_json(&report)).unwrap();
        assert_eq!(doc["quic"]["handshakes"], 5);
        assert_eq!(doc["quic"]["datagrams"]["receive_calls"], 1_500);
        assert_eq!(doc["quic"]["packets"]["lost"], 41);
        assert_eq!(doc["quic"]["connections_ended"]["H3_NO_ERROR"], 2);
        assert_eq!(doc["quic"]["ended_by_server"], 3);
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}");

        let html = crate::render_html(&[crate::HtmlRun {
            name: "run".into(),
            report: &report,
        }]);
        assert!(html.contains("QUIC of run"), "missing heading");
        assert!(
            html.contains("<li>handshakes 5 (their times: the connect phase)</li>"),
            "missing figures"
        );

        // A run without QUIC has none of it.
        let plain = seeded::base();
        let plain = plain.report();
        assert!(!crate::text::render_text(&plain).contains("QUIC"));
        let doc: serde_json::Value = serde_json::from_str(&crate::render_json(&plain)).unwrap();
        assert!(doc.get("quic").is_none());
    }
}
