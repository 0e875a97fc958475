//! Waiting for the next arrival with microsecond precision, and reading what a thread used:
//! its CPU time and its wake-ups.
//!
//! tokio's timer wheel has millisecond granularity: a request due at 10.3 ms would leave at
//! 11 ms, so at rates above a few hundred per second arrivals bunch on millisecond ticks and the
//! scheduling lag sits near 1 ms. On Linux a `timerfd` registered with the same event loop wakes
//! the worker when the arrival is due, to within the kernel's timer accuracy.

use std::time::{Duration, Instant};

/// Due times closer than this are not worth a timer: the arrival is dispatched at once.
const SPIN_FREE_WINDOW: Duration = Duration::from_micros(20);

/// A one-shot timer re-armed for each arrival.
pub(crate) struct Timer {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
    /// A second timerfd, blocking and not registered with the runtime, for
    /// [`Timer::block_until`].
    #[cfg(target_os = "linux")]
    blocking: Option<std::os::fd::OwnedFd>,
}

impl Timer {
    /// A timer on the current runtime; falls back to tokio's timer if no timerfd is available.
    pub(crate) fn new() -> Timer {
        #[cfg(target_os = "linux")]
        {
            use rustix::time::{timerfd_create, TimerfdClockId, TimerfdFlags};
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )
            .ok()
            .and_then(register);
            let blocking = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC).ok();
            Timer { fd, blocking }
        }
        #[cfg(not(target_os = "linux"))]
        Timer {}
    }

    /// Returns at `due` (at once if `due` has passed).
    pub(crate) async fn sleep_until(&mut self, due: Instant) {
        let now = Instant::now();
        if due <= now + SPIN_FREE_WINDOW {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            if precise_sleep(fd, due - now).await.is_ok() {
                return;
            }
        }
        tokio::time::sleep_until(due.into()).await;
    }

    /// Sleeps the calling thread, not the task, until `due` (at once if it has passed, or is
    /// within [`SPIN_FREE_WINDOW`]): nothing else on the thread runs meanwhile, and no socket
    /// that turns readable wakes it, as it would the runtime's own wait. Events that come in
    /// the meantime wait in the runtime's epoll set for its next look. False, having not
    /// slept, where no such timer is available.
    pub(crate) fn block_until(&self, due: Instant) -> bool {
        let now = Instant::now();
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.blocking {
            if due <= now + SPIN_FREE_WINDOW {
                return true;
            }
            if arm(fd, due - now).is_err() {
                return false;
            }
            // A blocking read returns once the timer has expired (its count, not needed).
            let mut count = [0u8; 8];
            loop {
                match rustix::io::read(fd, &mut count) {
                    Err(rustix::io::Errno::INTR) => continue,
                    done => return done.is_ok(),
                }
            }
        }
        let _ = (due, now);
        false
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn register(fd: std::os::fd::OwnedFd) -> Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    // SAFETY: `register` requires that the descriptor stays open and is not replaced while it
    // is registered. The AsyncFd takes ownership of this OwnedFd, nothing else holds it, and it
    // is only closed when the AsyncFd (and with it the registration) is dropped.
    unsafe { tokio::io::unix::AsyncFd::register(fd) }.ok()
}

#[cfg(target_os = "linux")]
async fn precise_sleep(
    fd: &tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    after: Duration,
) -> std::io::Result<()> {
    // Taken before arming, so the kernel's expiry (its own now + `after`) is never before it.
    let due = Instant::now() + after;
    arm(fd.get_ref(), after)?;
    // The expiration count is never read: arming the timer resets it, and the registration is
    // edge-triggered, so each expiry is one readiness event of its own. That saves a `read`
    // per arrival, about one syscall in six of an open-loop request. A readiness that comes
    // before `due` (none is expected) re-arms for the rest rather than ending the sleep early.
    loop {
        let mut guard = fd.readable().await?;
        guard.clear_ready();
        let now = Instant::now();
        if now >= due {
            return Ok(());
        }
        arm(fd.get_ref(), due - now)?;
    }
}

#[cfg(target_os = "linux")]
fn arm(fd: impl std::os::fd::AsFd, after: Duration) -> std::io::Result<()> {
    use rustix::time::{timerfd_settime, Itimerspec, TimerfdTimerFlags, Timespec};
    let spec = Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: Timespec {
            tv_sec: after.as_secs() as _,
            tv_nsec: after.subsec_nanos() as _,
        },
    };
    timerfd_settime(fd, TimerfdTimerFlags::empty(), &spec)?;
    Ok(())
}

/// CPU time the calling thread has used so far.
pub(crate) fn thread_cpu_time() -> Duration {
    #[cfg(target_os = "linux")]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }
    #[cfg(not(target_os = "linux"))]
    Duration::ZERO
}

/// Times the calling thread has slept and been woken so far (its voluntary context switches:
/// a blocking wait for an event, a timer or a lock); 0 where they cannot be read.
#[allow(unsafe_code)]
pub(crate) fn thread_wakeups() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // rustix has no getrusage; libc's is a plain system call filling the struct it is given.
        // SAFETY: rusage is plain data; all-zero is a valid one.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a live rusage for getrusage to fill.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0 {
            return usage.ru_nvcsw.max(0) as u64;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_at_the_due_time_not_before() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut timer = Timer::new();
            for micros in [0u64, 10, 300, 2_500] {
                let due = Instant::now() + Duration::from_micros(micros);
                timer.sleep_until(due).await;
                // Never early (beyond the window where dispatching at once is the plan).
                assert!(Instant::now() + SPIN_FREE_WINDOW >= due, "{micros} µs");
            }
        });
    }

    #[test]
    fn blocks_the_thread_until_the_due_time_not_before() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _inside = rt.enter();
        let timer = Timer::new();
        for micros in [0u64, 10, 300, 2_500] {
            let due = Instant::now() + Duration::from_micros(micros);
            assert!(timer.block_until(due), "{micros} µs");
            assert!(Instant::now() + SPIN_FREE_WINDOW >= due, "{micros} µs");
        }
    }

    #[test]
    fn thread_cpu_time_advances_with_work() {
        let before = thread_cpu_time();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_time() > before);
    }

    #[test]
    fn a_thread_that_sleeps_counts_its_wakeups() {
        let before = thread_wakeups();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Each sleep is one wake-up; a busy machine may add its own (a page fault's I/O).
        let woken = thread_wakeups() - before;
        assert!((5..=10).contains(&woken), "{woken}");
    }
}
