//! The histograms every recorder keeps: their bounds and precision, and their names.

use hdrhistogram::Histogram;

/// Highest latency the histograms track, in microseconds (one hour). Larger values are clamped.
pub const HISTOGRAM_MAX_US: u64 = 3_600_000_000;
/// Significant decimal digits the latency histogram keeps (0.1 % relative error).
pub const HISTOGRAM_SIGFIG: u8 = 3;
/// Significant digits of the diagnostic histograms (uncorrected latency, scheduling lag):
/// 1 % is plenty to show coordinated omission or a late generator, and it keeps them, and
/// the results files that store them every second, ten times smaller. The phases (connect,
/// TLS, first byte, transfer) are figures people compare with the latency and with servers'
/// own clocks, so they keep [`HISTOGRAM_SIGFIG`].
pub const DIAGNOSTIC_SIGFIG: u8 = 2;

/// A recorder's histograms, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// Latency from the intended start (responses).
    Latency,
    /// Latency from dispatch (responses).
    Uncorrected,
    /// Scheduling lag (every dispatched request).
    Lag,
    /// Of the scheduling lag, belier's own lateness (open loop only; the rest is the wait
    /// for a free connection).
    Dispatch,
    /// TCP connect (requests that opened a connection).
    Connect,
    /// TLS handshake (requests that opened a TLS connection).
    Tls,
    /// Request sent to first response byte (responses).
    Ttfb,
    /// First to last response byte (responses).
    Transfer,
}

impl Metric {
    /// Every histogram a recorder keeps.
    pub const ALL: [Metric; 8] = [
        Metric::Latency,
        Metric::Uncorrected,
        Metric::Lag,
        Metric::Dispatch,
        Metric::Connect,
        Metric::Tls,
        Metric::Ttfb,
        Metric::Transfer,
    ];

    /// Stable name, as used in results files.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Latency => "latency",
            Metric::Uncorrected => "uncorrected",
            Metric::Lag => "lag",
            Metric::Dispatch => "dispatch",
            Metric::Connect => "connect",
            Metric::Tls => "tls",
            Metric::Ttfb => "ttfb",
            Metric::Transfer => "transfer",
        }
    }

    /// Its place in [`Metric::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The significant figures its histogram keeps: [`DIAGNOSTIC_SIGFIG`] for the figures
    /// that diagnose belier's own timing, [`HISTOGRAM_SIGFIG`] for the server's.
    pub fn sigfig(self) -> u8 {
        match self {
            Metric::Uncorrected | Metric::Lag | Metric::Dispatch => DIAGNOSTIC_SIGFIG,
            _ => HISTOGRAM_SIGFIG,
        }
    }

    /// The metric with this [`Metric::name`].
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }
}

pub(crate) fn new_histogram(sigfig: u8) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, sigfig)
        .expect("constant histogram bounds are valid");
    // A fixed-size histogram never reallocates on the hot path.
    h.auto(false);
    h
}
