//! Adding one recorder's figures to another's: workers' intervals into a run's, shards'
//! totals into one report's.

use std::ops::AddAssign;

use super::Recorder;
use crate::row::add_rows;

impl AddAssign<&Recorder> for Recorder {
    fn add_assign(&mut self, other: &Recorder) {
        self.add_histograms(other);
        self.scheduled += other.scheduled;
        self.dropped += other.dropped;
        for (mine, theirs) in self.status.iter_mut().zip(other.status.iter()) {
            *mine += theirs;
        }
        for (mine, theirs) in self.grpc.iter_mut().zip(other.grpc) {
            *mine += theirs;
        }
        if let Some(theirs) = other.messages() {
            self.messages_mut().add(theirs);
        }
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        for (mine, theirs) in self.error_examples.iter_mut().zip(&other.error_examples) {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
        if self.tls_session.is_none() {
            self.tls_session.clone_from(&other.tls_session);
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.bytes_decoded += other.bytes_decoded;
        self.connections_opened += other.connections_opened;
        self.server_closes += other.server_closes;
        self.resent += other.resent;
        self.tls_resumed += other.tls_resumed;
        self.kernel_stamped += other.kernel_stamped;
        self.wakeups += other.wakeups;
        self.extremes.merge(&other.extremes);
        self.exemplars.merge(&other.exemplars);
        if self.step_exemplars.len() < other.step_exemplars.len() {
            self.step_exemplars
                .resize_with(other.step_exemplars.len(), Default::default);
        }
        for (mine, theirs) in self.step_exemplars.iter_mut().zip(&other.step_exemplars) {
            mine.merge(theirs);
        }
        add_rows(&mut self.steps, &other.steps);
        add_rows(&mut self.checks, &other.checks);
        add_rows(&mut self.metrics, &other.metrics);
        self.iterations += other.iterations;
        if let Some(theirs) = other.routes() {
            self.routes_mut().add(theirs);
        }
        if let Some(theirs) = other.held() {
            self.held_mut().add(theirs);
        }
        if let Some(theirs) = other.quic() {
            self.record_quic(theirs);
        }
        if let Some(theirs) = other.server_times() {
            self.server_times_mut().add(theirs);
        }
    }
}
