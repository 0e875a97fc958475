//! The hand-over of what a worker recorded, once per interval, with its readings (CPU,
//! in flight, connections open at most) and its thread's wake-ups.

use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_stats::Gauges;

use crate::local::Local;
use crate::plan::Plan;
use crate::timer::thread_cpu_time;
use crate::Event;

/// Hands the recorder over at every interval boundary, aligned on the run's start so that
/// all workers' interval `k` covers the same span of time.
pub(super) async fn hand_over_intervals(
    local: Rc<Local>,
    plan: Arc<Plan>,
    worker: usize,
    events: Sender<Event>,
) {
    let first = plan.start + plan.interval;
    let mut ticks = tokio::time::interval_at(first.into(), plan.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last = (Instant::now(), thread_cpu_time());
    loop {
        let at = ticks.tick().await.into_std();
        let index = interval_index(at - plan.start, plan.interval).saturating_sub(1);
        let now = (Instant::now(), thread_cpu_time());
        let wall = now.0.saturating_duration_since(last.0).as_secs_f64();
        let gauges = Gauges {
            in_flight: local.in_flight(),
            cpu: if wall > 0.0 {
                (now.1.saturating_sub(last.1).as_secs_f64() / wall).min(1.0)
            } else {
                0.0
            },
            connections_peak: local.connections.open.take_peak(),
            held: local.connections.held.get(),
        };
        last = now;
        local.flush_samples();
        let recorder = {
            let mut r = local.recording.recorder.borrow_mut();
            local.recording.count_wakeups(&mut r);
            for _ in 0..local.connections.open.take_server_ended() {
                r.record_server_close();
            }
            r.record_quic(&local.connections.take_quic(false));
            let snapshot = r.clone();
            r.reset();
            snapshot
        };
        // A thread kept from its ticks (a machine saturated by a hundred thousand connects)
        // skips boundaries: what it recorded meanwhile goes with this one, and the intervals
        // it skipped get its gauges as read now, so that no interval of the run sums the
        // gauges of fewer workers than it has (the held connections of a worker missing from
        // one interval read as a hold that broke).
        for skipped in local.recording.handed_over.get()..index {
            let sent = events.send(Event::Recorded {
                worker,
                index: skipped,
                recorder: Box::default(),
                gauges,
            });
            if sent.is_err() {
                return;
            }
        }
        let sent = events.send(Event::Recorded {
            worker,
            index,
            recorder: Box::new(recorder),
            gauges,
        });
        if sent.is_err() {
            return;
        }
        local.recording.handed_over.set(index + 1);
    }
}

fn interval_index(elapsed: Duration, interval: Duration) -> u64 {
    (elapsed.as_nanos() / interval.as_nanos()) as u64
}
