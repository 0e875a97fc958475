//! Run information for tests (this crate's and, with the `fixtures` feature, the report's and
//! this crate's example): a closed-loop run of 1,000 requests on 10 connections.

use crate::info::{Model, RunInfo};

/// A closed-loop run of 1,000 requests over 10 connections and 2 threads, started
/// 2026-11-22T10:00:00Z; tests override fields with `RunInfo { .., ..info() }`.
pub fn info() -> RunInfo {
    RunInfo {
        belier_version: "0.1.0".into(),
        url: "http://127.0.0.1:8080/".into(),
        address: "127.0.0.1:8080".into(),
        method: "GET".into(),
        connections: 10,
        threads: 2,
        keepalive: true,
        protocol: "HTTP/1.1".into(),
        requests: Some(1000),
        duration_s: None,
        schedule_s: None,
        timeout_s: 30.0,
        host_cores: 2,
        host_name: None,
        shard_hosts: Vec::new(),
        workers: Vec::new(),
        started_at: "2026-11-22T10:00:00Z".into(),
        model: Model::Closed,
        rate: None,
        stages: vec![],
        ramp_up_s: None,
        arrivals: None,
        seed: None,
        max_connections: None,
        max_in_flight: None,
        timer_slack_us: None,
        shards: 1,
        shard: None,
        plan: None,
        virtual_users: None,
        pacing_s: None,
        steps: vec![],
        checks: vec![],
        metrics: vec![],
        targets: vec![],
    }
}
