//! The least an HTTP/1.1 closed-loop client does per request, on epoll or on io_uring:
//! `bench/syscalls`' floor beside belier and wrk (#37).
//!
//! One thread, `-c` keep-alive connections, each sending the same request as soon as its
//! previous response is whole. A response's end is found from its head's `Content-Length`;
//! with `--stamps` every receive carries the kernel's receive stamp (`SO_TIMESTAMPNS`, read
//! from the control message as belier does) and the latency is stamp − send, summed. Nothing
//! else is timed or recorded. `--io epoll`: level-triggered epoll, one `sendto` and one
//! `recvmsg` a request. `--io uring`: sends and receives are io_uring operations, all that are
//! ready submitted and reaped by one `io_uring_enter` (deferred task work, one issuer);
//! `--multishot` keeps one receive armed per connection with provided buffers instead of
//! re-arming it after every response; `--via-epoll` waits as a client inside an epoll-based
//! runtime would: submit, then `epoll_wait` on the ring's descriptor.
//!
//! A bench tool: a bad argument or a failed set-up stops it with a message.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

struct Options {
    io: String,
    stamps: bool,
    multishot: bool,
    via_epoll: bool,
    connections: usize,
    duration: Duration,
    addr: SocketAddr,
    host: String,
}

fn options() -> Options {
    let mut o = Options {
        io: "epoll".into(),
        stamps: false,
        multishot: false,
        via_epoll: false,
        connections: 50,
        duration: Duration::from_secs(5),
        addr: "127.0.0.1:80".parse().unwrap(),
        host: String::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--io" => o.io = args.next().expect("--io epoll|uring"),
            "--stamps" => o.stamps = true,
            "--multishot" => o.multishot = true,
            "--via-epoll" => o.via_epoll = true,
            "-c" => o.connections = args.next().and_then(|v| v.parse().ok()).expect("-c N"),
            "-d" => {
                let s: u64 = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("-d SECONDS");
                o.duration = Duration::from_secs(s);
            }
            url => {
                let hostport = url.trim_start_matches("http://").trim_end_matches('/');
                o.host = hostport.to_string();
                o.addr = hostport
                    .to_socket_addrs()
                    .expect("URL")
                    .next()
                    .expect("address");
            }
        }
    }
    o
}

/// Where a response ends, once its head is in: head length + Content-Length.
fn response_len(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&buf[..head]).ok()?;
    let body = text
        .split("\r\n")
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    Some(head + body)
}

/// A connection's receive state: bytes of the response so far.
struct Conn {
    stream: TcpStream,
    pending: Vec<u8>,
}

impl Conn {
    /// Takes `data`; how many whole responses are now in (their bytes dropped).
    fn take(&mut self, data: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(data);
        let mut done = 0;
        while let Some(n) = response_len(&self.pending) {
            if self.pending.len() < n {
                break;
            }
            if !self.pending.starts_with(b"HTTP/1.1 200") {
                return Err(io::Error::other("not a 200"));
            }
            self.pending.drain(..n);
            done += 1;
        }
        Ok(done)
    }
}

fn connect(o: &Options) -> Vec<Conn> {
    (0..o.connections)
        .map(|_| {
            let stream = TcpStream::connect(o.addr).expect("connect");
            stream.set_nodelay(true).unwrap();
            stream.set_nonblocking(true).unwrap();
            if o.stamps {
                let on: libc::c_int = 1;
                let r = unsafe {
                    libc::setsockopt(
                        stream.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_TIMESTAMPNS,
                        &on as *const _ as *const libc::c_void,
                        size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                assert_eq!(r, 0, "SO_TIMESTAMPNS");
            }
            Conn {
                stream,
                pending: Vec::with_capacity(1024),
            }
        })
        .collect()
}

/// The kernel's receive stamp in a received message's control data, in ns since the epoch.
fn stamp_of(msg: &libc::msghdr) -> Option<u64> {
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// What a run counted.
#[derive(Default)]
struct Tally {
    completed: u64,
    stamped: u64,
    latency_ns: u64,
    errors: u64,
}

impl Tally {
    fn response(&mut self, stamp: Option<u64>, sent_wall: u64) {
        self.completed += 1;
        if let Some(s) = stamp {
            self.stamped += 1;
            self.latency_ns += s.saturating_sub(sent_wall);
        }
    }
}

const CMSG_SPACE: usize = 64;

fn run_epoll(o: &Options, request: &[u8]) -> Tally {
    let mut conns = connect(o);
    let mut sent_wall = vec![0u64; conns.len()];
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    for (i, c) in conns.iter().enumerate() {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, c.stream.as_raw_fd(), &mut ev) };
    }
    let mut tally = Tally::default();
    for (i, c) in conns.iter().enumerate() {
        sent_wall[i] = if o.stamps { wall_ns() } else { 0 };
        send_all(c.stream.as_raw_fd(), request);
    }
    let end = Instant::now() + o.duration;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 128];
    let mut buf = vec![0u8; 16384];
    let mut cbuf = [0u8; CMSG_SPACE];
    while Instant::now() < end {
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, 100) };
        for ev in &events[..n.max(0) as usize] {
            let i = ev.u64 as usize;
            let fd = conns[i].stream.as_raw_fd();
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let mut msg: libc::msghdr = unsafe { zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if o.stamps {
                msg.msg_control = cbuf.as_mut_ptr().cast();
                msg.msg_controllen = CMSG_SPACE;
            }
            let r = unsafe { libc::recvmsg(fd, &mut msg, 0) };
            if r <= 0 {
                tally.errors += 1;
                continue;
            }
            let stamp = if o.stamps { stamp_of(&msg) } else { None };
            match conns[i].take(&buf[..r as usize]) {
                Ok(0) => {}
                Ok(done) => {
                    for _ in 0..done {
                        tally.response(stamp, sent_wall[i]);
                    }
                    sent_wall[i] = if o.stamps { wall_ns() } else { 0 };
                    send_all(fd, request);
                }
                Err(_) => tally.errors += 1,
            }
        }
    }
    tally
}

fn send_all(fd: RawFd, request: &[u8]) {
    let r = unsafe {
        libc::send(
            fd,
            request.as_ptr().cast(),
            request.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    assert_eq!(r as usize, request.len(), "a short send");
}

/// One connection's receive buffers for io_uring's (single-shot) recvmsg: kept at a fixed
/// address while an operation may write them.
struct Slot {
    buf: Vec<u8>,
    iov: libc::iovec,
    msg: libc::msghdr,
    cbuf: [u8; CMSG_SPACE],
}

const SEND: u64 = 0;
const RECV: u64 = 1;
const POLL_FIRST: u16 = 1; // IORING_RECVSEND_POLL_FIRST
const GROUP: u16 = 7;

fn run_uring(o: &Options, request: &[u8]) -> Tally {
    use io_uring::IoUring;
    let mut conns = connect(o);
    let n = conns.len();
    let mut builder = IoUring::builder();
    if !o.via_epoll {
        builder
            .setup_single_issuer()
            .setup_coop_taskrun()
            .setup_defer_taskrun();
    }
    let mut ring = builder
        .build((4 * n).next_power_of_two() as u32)
        .expect("io_uring");
    let ep = o.via_epoll.then(|| epoll_on(ring.as_raw_fd()));
    let mut slots = new_slots(n, o.stamps);
    let mut provided = o.multishot.then(|| Provided::register(&mut ring, n));
    // The msghdr a multishot recvmsg is given: only its name and control lengths are read.
    let mut ms_msg: libc::msghdr = unsafe { zeroed() };
    if o.stamps {
        ms_msg.msg_controllen = CMSG_SPACE;
    }
    let mut sent_wall = vec![0u64; n];
    let fds: Vec<RawFd> = conns.iter().map(|c| c.stream.as_raw_fd()).collect();
    let push = |ring: &mut IoUring, e: io_uring::squeue::Entry| unsafe {
        while ring.submission().push(&e).is_err() {
            ring.submit().expect("submit");
        }
    };
    for i in 0..n {
        sent_wall[i] = if o.stamps { wall_ns() } else { 0 };
        push(&mut ring, send_entry(fds[i], request, i));
        let recv = recv_entry(fds[i], i, o.multishot, &ms_msg, &mut slots[i].msg);
        push(&mut ring, recv);
    }
    let mut tally = Tally::default();
    let end = Instant::now() + o.duration;
    while Instant::now() < end {
        wait(&mut ring, ep);
        let done: Vec<(u64, i32, u32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result(), c.flags()))
            .collect();
        for (ud, res, flags) in done {
            let i = (ud >> 1) as usize;
            let failed = match ud & 1 {
                SEND => res as usize != request.len(),
                _ => res <= 0,
            };
            if failed || ud & 1 == SEND {
                tally.errors += failed as u64;
                continue;
            }
            let (taken, stamp) = match &mut provided {
                Some(p) => p.take(flags, &ms_msg, o.stamps, &mut conns[i]),
                None => {
                    let s = &slots[i];
                    let stamp = if o.stamps { stamp_of(&s.msg) } else { None };
                    (conns[i].take(&s.buf[..res as usize]), stamp)
                }
            };
            match taken {
                Ok(0) => {}
                Ok(k) => {
                    for _ in 0..k {
                        tally.response(stamp, sent_wall[i]);
                    }
                    sent_wall[i] = if o.stamps { wall_ns() } else { 0 };
                    push(&mut ring, send_entry(fds[i], request, i));
                }
                Err(_) => tally.errors += 1,
            }
            if !o.multishot || !io_uring::cqueue::more(flags) {
                let recv = recv_entry(fds[i], i, o.multishot, &ms_msg, &mut slots[i].msg);
                push(&mut ring, recv);
            }
        }
    }
    // Receives are still in flight: the kernel may write their buffers until the ring is
    // torn down, after this returns. They are left allocated; the process ends next.
    std::mem::forget(slots);
    std::mem::forget(provided);
    tally
}

/// `--via-epoll`: an epoll set watching the ring's descriptor (readable when completions are
/// in), as an epoll-based runtime (tokio) would wait on it.
fn epoll_on(ring_fd: RawFd) -> RawFd {
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 0,
    };
    unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, ring_fd, &mut ev) };
    ep
}

/// Submits what is queued and waits for a completion: in one `io_uring_enter`, or (with
/// `ep`, `--via-epoll`) submitting without waiting, then waiting in `epoll_wait` unless
/// completions are in already, reaped from the shared ring without a call.
fn wait(ring: &mut io_uring::IoUring, ep: Option<RawFd>) {
    let Some(ep) = ep else {
        ring.submit_and_wait(1).expect("io_uring_enter");
        return;
    };
    if !ring.submission().is_empty() {
        ring.submit().expect("io_uring_enter");
    }
    if ring.completion().is_empty() {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        unsafe { libc::epoll_wait(ep, &mut ev, 1, 100) };
    }
}

/// Each connection's receive buffers for single-shot receives, boxed: the kernel is given
/// pointers into them (the msghdr to its iovec), which must not move.
#[allow(clippy::vec_box)]
fn new_slots(n: usize, stamps: bool) -> Vec<Box<Slot>> {
    (0..n)
        .map(|_| {
            let mut s = Box::new(Slot {
                buf: vec![0u8; 16384],
                iov: unsafe { zeroed() },
                msg: unsafe { zeroed() },
                cbuf: [0; CMSG_SPACE],
            });
            s.iov = libc::iovec {
                iov_base: s.buf.as_mut_ptr().cast(),
                iov_len: s.buf.len(),
            };
            s.msg.msg_iov = &mut s.iov;
            s.msg.msg_iovlen = 1;
            if stamps {
                s.msg.msg_control = s.cbuf.as_mut_ptr().cast();
                s.msg.msg_controllen = CMSG_SPACE;
            }
            s
        })
        .collect()
}

/// Multishot receives' buffers: a ring of provided buffers each receive takes one of, given
/// back once read.
struct Provided {
    mem: *mut u8,
    entries: u16,
    tail: u16,
    pool: Vec<u8>,
}

/// The size of each provided buffer.
const BUF: usize = 4096;

impl Provided {
    /// Registers a ring of buffers for `n` connections' receives, all given.
    fn register(ring: &mut io_uring::IoUring, n: usize) -> Provided {
        let entries: u16 = (2 * n).next_power_of_two() as u16;
        let mut pool = vec![0u8; entries as usize * BUF];
        let layout = std::alloc::Layout::from_size_align(entries as usize * 16, 4096).unwrap();
        let mem = unsafe { std::alloc::alloc_zeroed(layout) };
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(mem as u64, entries, GROUP, 0)
                .expect("buffer ring");
        }
        for b in 0..entries {
            provide(mem, entries, b, &mut pool, BUF, b as usize);
        }
        set_tail(mem, entries);
        Provided {
            mem,
            entries,
            tail: entries,
            pool,
        }
    }

    /// Gives what a completion with `flags` received to `conn` (how many responses it
    /// completed) with its stamp, and the buffer back to the ring.
    fn take(
        &mut self,
        flags: u32,
        ms_msg: &libc::msghdr,
        stamps: bool,
        conn: &mut Conn,
    ) -> (io::Result<usize>, Option<u64>) {
        let b = io_uring::cqueue::buffer_select(flags).expect("a provided buffer") as usize;
        let mem = &self.pool[b * BUF..(b + 1) * BUF];
        let out = io_uring::types::RecvMsgOut::parse(mem, ms_msg).expect("recvmsg out");
        let stamp = if stamps {
            stamp_in(out.control_data())
        } else {
            None
        };
        let taken = conn.take(out.payload_data());
        provide(self.mem, self.entries, self.tail, &mut self.pool, BUF, b);
        self.tail = self.tail.wrapping_add(1);
        set_tail(self.mem, self.tail);
        (taken, stamp)
    }
}

/// Connection `i`'s request, sent whole (a short send is counted as an error).
fn send_entry(fd: RawFd, request: &[u8], i: usize) -> io_uring::squeue::Entry {
    io_uring::opcode::Send::new(
        io_uring::types::Fd(fd),
        request.as_ptr(),
        request.len() as u32,
    )
    .flags(libc::MSG_NOSIGNAL)
    .build()
    .user_data((i as u64) << 1 | SEND)
}

/// Connection `i`'s receive: multishot into the provided buffers (`ms_msg` gives the control
/// room), or one `recvmsg` into its own buffers that polls before it tries.
fn recv_entry(
    fd: RawFd,
    i: usize,
    multishot: bool,
    ms_msg: &libc::msghdr,
    msg: &mut libc::msghdr,
) -> io_uring::squeue::Entry {
    let fd = io_uring::types::Fd(fd);
    let entry = match multishot {
        true => io_uring::opcode::RecvMsgMulti::new(fd, ms_msg, GROUP).build(),
        false => io_uring::opcode::RecvMsg::new(fd, msg)
            .ioprio(POLL_FIRST)
            .build(),
    };
    entry.user_data((i as u64) << 1 | RECV)
}

/// Puts buffer `b` of the pool at ring position `at` (the tail is published separately).
fn provide(mem: *mut u8, entries: u16, at: u16, pool: &mut [u8], size: usize, b: usize) {
    let idx = (at & (entries - 1)) as usize;
    unsafe {
        let e = mem.add(idx * 16);
        (e as *mut u64).write_volatile(pool.as_mut_ptr().add(b * size) as u64);
        (e.add(8) as *mut u32).write_volatile(size as u32);
        (e.add(12) as *mut u16).write_volatile(b as u16);
    }
}

fn set_tail(mem: *mut u8, tail: u16) {
    // The ring's tail overlays the first entry's last 2 bytes (struct io_uring_buf_ring).
    let t = unsafe { &*(mem.add(14) as *const std::sync::atomic::AtomicU16) };
    t.store(tail, std::sync::atomic::Ordering::Release);
}

/// The receive stamp in a multishot receive's control data.
fn stamp_in(control: &[u8]) -> Option<u64> {
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_control = control.as_ptr() as *mut _;
    msg.msg_controllen = control.len();
    stamp_of(&msg)
}

fn main() {
    let o = options();
    let request = format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", o.host).into_bytes();
    let start = Instant::now();
    let tally = match o.io.as_str() {
        "epoll" => run_epoll(&o, &request),
        "uring" => run_uring(&o, &request),
        other => panic!("--io {other}: epoll or uring"),
    };
    let secs = start.elapsed().as_secs_f64();
    let mean_us = tally.latency_ns as f64 / tally.stamped.max(1) as f64 / 1e3;
    println!(
        "{{\"summary\": {{\"requests\": {}, \"succeeded\": {}, \"errors\": {}, \"duration_s\": {:.3}, \"stamped\": {}, \"mean_latency_us\": {:.1}}}}}",
        tally.completed + tally.errors,
        tally.completed,
        tally.errors,
        secs,
        tally.stamped,
        mean_us
    );
}
