//! The latency histogram's buckets, as every output folds the recorded HDR histogram into
//! them.

/// Upper bounds of the latency histogram's buckets, in seconds (`+Inf` follows).
pub const BUCKETS_S: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// The bucket a latency of `latency_us` counts in: the first whose bound is at or above it
/// (to the HDR histogram's precision, 0.1 %), `BUCKETS_S.len()` for `+Inf`.
pub(crate) fn bucket(latency_us: u64) -> usize {
    BUCKETS_S
        .iter()
        .position(|&b| latency_us as f64 <= b * 1e6)
        .unwrap_or(BUCKETS_S.len())
}
