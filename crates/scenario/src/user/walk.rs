//! How a virtual user walks its program: the next action (a request built from its
//! templates, a pause, the end of an iteration), and what a reply or a failure does to it
//! (checks, extraction, hooks, branching).

use super::*;

impl Local {
    pub(super) fn next(&mut self, shared: &Shared) -> Action {
        if let Some((hop, k)) = self.next_hop.take() {
            return Action::Send(self.send(shared, hop, k));
        }
        for _ in 0..MAX_OPS_PER_ACTION {
            let action = match self.state {
                State::Stopped => Some(Action::Stop),
                State::Idle => match self.start_iteration(shared) {
                    Some(scenario) => {
                        self.state = State::Running {
                            scenario,
                            pc: 0,
                            loops: Vec::new(),
                            abort: false,
                        };
                        None
                    }
                    None => {
                        self.state = State::Stopped;
                        Some(Action::Stop)
                    }
                },
                State::Running { .. } => self.step(shared),
            };
            if let Some(action) = action {
                return action;
            }
        }
        self.state = State::Idle;
        self.iteration += 1;
        Action::EndIteration
    }

    /// Runs the running iteration's next op: the action it comes to (a request to send, a
    /// pause, the iteration's end), or `None` to go on to the op after it.
    fn step(&mut self, shared: &Shared) -> Option<Action> {
        let State::Running {
            scenario,
            pc,
            loops,
            abort,
        } = &mut self.state
        else {
            return None;
        };
        let ops = &shared.program.scenarios[*scenario].ops;
        let Some(op) = ops.get(*pc).filter(|_| !*abort) else {
            let finished = !*abort;
            return Some(self.end_iteration(shared, finished));
        };
        *pc += 1;
        match op {
            Op::Request(index) if shared.program.requests[*index].ws.is_some() => {
                let index = *index;
                return Some(self.render_socket(shared, index));
            }
            Op::Request(index) => {
                let index = *index;
                let outgoing = self.render(shared, index);
                return self
                    .before_request(shared, index, outgoing)
                    .map(Action::Send);
            }
            Op::Parallel { step, requests, .. } => {
                let (step, requests) = (*step, requests.clone());
                return Some(self.parallel(shared, step, &requests));
            }
            Op::Script(index) => {
                let index = *index;
                self.script_step(shared, index);
            }
            Op::Pause(min, max) => {
                let d = if min == max {
                    *min
                } else {
                    let span = (*max - *min).as_nanos().min(u64::MAX as u128) as u64;
                    *min + Duration::from_nanos(self.rng.u64(0..=span))
                };
                return Some(Action::Pause(d));
            }
            Op::LoopStart { count, end } => {
                if *count == 0 {
                    *pc = end + 1;
                } else {
                    loops.push(*count);
                }
            }
            Op::LoopEnd { start } => {
                if let Some(left) = loops.last_mut() {
                    *left -= 1;
                    if *left > 0 {
                        *pc = start + 1;
                    } else {
                        loops.pop();
                    }
                }
            }
            Op::If { cond, end, .. } => {
                let facts = Facts {
                    vars: &self.vars,
                    status: self.last_status,
                    failed: self.last_failed,
                    checks: &self.check_results,
                };
                if !cond.holds(&facts) {
                    *pc = *end;
                }
            }
            Op::Choice { branches, total } => {
                let mut pick = self.rng.u64(0..(*total).max(1));
                for (weight, start) in branches {
                    if pick < *weight {
                        *pc = *start;
                        break;
                    }
                    pick -= weight;
                }
            }
            Op::Jump { to } => *pc = *to,
            Op::Group(_) | Op::GroupEnd | Op::Branch { .. } => {}
        }
        None
    }

    /// Ends the iteration, `finished` when no failed step aborted it: the one user of a
    /// setup or teardown keeps the values it extracted for the others.
    fn end_iteration(&mut self, shared: &Shared, finished: bool) -> Action {
        if let Some(phase) = &shared.phase {
            let values = phase
                .exports
                .iter()
                .filter_map(|s| Some((*s, self.vars[*s].clone()?)))
                .collect();
            phase.with(|o| {
                o.finished = finished;
                o.values = values;
            });
        }
        self.state = State::Idle;
        self.iteration += 1;
        Action::EndIteration
    }

    /// A parallel group's action: its requests rendered together, each one's pending state
    /// queued for its reply. A request its `before_request` hook fails is not sent (and
    /// fails its step); redirects are not followed inside a group.
    fn parallel(&mut self, shared: &Shared, step: usize, requests: &[usize]) -> Action {
        let mut out = Vec::with_capacity(requests.len());
        for &index in requests {
            let outgoing = self.render(shared, index);
            self.hop = None;
            if let Some(outgoing) = self.before_request(shared, index, outgoing) {
                self.queued.extend(self.pending.take());
                out.push(outgoing);
            }
        }
        self.pending = self.queued.pop_front();
        Action::Parallel {
            step,
            requests: out,
        }
    }

    pub(super) fn reply(
        &mut self,
        shared: &Shared,
        reply: &Reply<'_>,
        tally: &mut dyn FnMut(usize, bool),
    ) -> Verdict {
        if self.redirected(shared, reply) {
            // A hop on the way: the step is judged on the answer its last hop gets.
            return Verdict { failed: false };
        }
        let Some(pending) = self.pending.take() else {
            return Verdict { failed: true };
        };
        self.pending = self.queued.pop_front();
        let request = &shared.program.requests[pending.request];
        let now = SystemTime::now();
        let jar = jar(&mut self.jars, pending.origin);
        if shared.cookies {
            jar.store_all(reply.headers(), &pending.path, now);
        }
        // A gRPC call fails by its status code; its checks read its response message.
        let bad_status = match &request.grpc {
            Some(_) => reply.grpc != Some(0),
            None => reply.status >= 400,
        };
        let mut failed = !request.status_checked && bad_status;
        // The first check that failed, for a phase's message.
        let mut failed_check = None;
        self.last_status = reply.status;
        let results = &mut self.check_results;
        let mut tally = |check: usize, passed: bool| {
            tally(check, passed);
            results[check] = passed;
            if !passed && failed_check.is_none() {
                failed_check = Some(check);
            }
        };
        if let Some(check) = request.vars_check {
            tally(check, !pending.missing_var);
            failed |= pending.missing_var;
        }
        let mut json = match &request.grpc {
            Some(method) => BodyJson::of_grpc(method, reply),
            None => BodyJson::default(),
        };
        for check in &request.checks {
            let passed = check.kind.passes(reply, &mut json);
            tally(check.index, passed);
            failed |= !passed;
        }
        for extraction in &request.extract {
            let value = extraction.source.extract(reply, &mut json, &|name| {
                jar.get(name, now).map(str::to_string)
            });
            tally(extraction.check, value.is_some());
            match value {
                Some(v) => self.vars[extraction.slot] = Some(v),
                None => failed = true,
            }
        }
        failed |= self.after_response(shared, pending.request, reply);
        if let Some(phase) = &shared.phase {
            failed = phase_reply(phase, &shared.program, request, reply, failed_check, failed);
        }
        self.conclude(shared, pending.request, failed)
    }

    pub(super) fn failed(&mut self, shared: &Shared, kind: ErrorKind) -> Verdict {
        self.last_status = 0;
        self.hop = None;
        let pending = self.pending.take();
        self.pending = self.queued.pop_front();
        match pending {
            Some(pending) => {
                if let Some(phase) = &shared.phase {
                    let name = &shared.program.requests[pending.request].name;
                    let what = format!("{name}: no response ({})", kind.name());
                    phase.with(|o| {
                        o.requests.push(what.clone());
                        o.failure.get_or_insert(what);
                    });
                }
                self.conclude(shared, pending.request, true)
            }
            None => Verdict { failed: true },
        }
    }
}
