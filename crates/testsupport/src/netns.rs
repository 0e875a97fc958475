//! Network namespaces a test makes for itself (as root, with iproute2's `ip`): a loopback of
//! its own whose settings (`net.ipv4.ip_local_port_range`, addresses) the test may change
//! without touching the machine's, optionally with a veth link to this namespace. Deleted,
//! with the processes started in it, when dropped.

use std::process::{Command, Output, Stdio};

use crate::binary::Binary;

/// A network namespace with its loopback up; with [`Namespace::linked`], also a veth link to
/// this one: `10.213.N.1` here, `10.213.N.2` there.
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// A namespace with only its loopback, up. `None` (after saying why) where namespaces
    /// cannot be made; under CI that is a failure.
    pub fn loopback(tag: &str) -> Option<Namespace> {
        let name = format!("belier-{tag}-{}", std::process::id() % 100_000);
        let ns = Namespace { name: name.clone() };
        let made = ip(&["netns", "add", &name]).and_then(|()| ns.ip(&["link", "set", "lo", "up"]));
        ns.made(made)
    }

    /// A namespace linked to this one by a veth pair, `10.213.n.1/24` here and
    /// `10.213.n.2/24` there, its loopback up. `None` as for [`Namespace::loopback`].
    pub fn linked(n: u8) -> Option<Namespace> {
        let name = format!("belier-t{}-{n}", std::process::id() % 100_000);
        let (here, there) = (
            format!("bt{n}h{}", std::process::id() % 10_000),
            format!("bt{n}n"),
        );
        let ns = Namespace { name: name.clone() };
        let made = ip(&["netns", "add", &name])
            .and_then(|()| ip(&["link", "add", &here, "type", "veth", "peer", "name", &there]))
            .and_then(|()| ip(&["link", "set", &there, "netns", &name]))
            .and_then(|()| ip(&["addr", "add", &format!("10.213.{n}.1/24"), "dev", &here]))
            .and_then(|()| ip(&["link", "set", &here, "up"]))
            .and_then(|()| ns.ip(&["addr", "add", &format!("10.213.{n}.2/24"), "dev", &there]))
            .and_then(|()| ns.ip(&["link", "set", &there, "up"]))
            .and_then(|()| ns.ip(&["link", "set", "lo", "up"]));
        ns.made(made)
    }

    fn made(self, made: Result<(), String>) -> Option<Namespace> {
        match made {
            Ok(()) => Some(self),
            Err(why) => {
                crate::missing::missing(
                    &format!("network namespaces cannot be made here ({why})"),
                    "run the tests as root, with iproute2",
                );
                None
            }
        }
    }

    /// Its name, for `ip netns exec`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME ARGS`: the namespace's own links, addresses and routes.
    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Sets the namespace's sysctl `key` (`net.ipv4.ip_local_port_range`) to `value`.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), String> {
        let out = self
            .command("sysctl")
            .args(["-w", &format!("{key}={value}")])
            .output()
            .map_err(|e| e.to_string())?;
        checked("sysctl", out)
    }

    /// `program` run inside the namespace (`ip netns exec NAME program`).
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name, program]);
        command
    }

    /// `belier ARGS` inside the namespace, its stderr piped, no worker token inherited.
    pub fn belier(&self, belier: &Binary, args: &[&str]) -> std::process::Child {
        self.command(&belier.path().to_string_lossy())
            .args(args)
            .env_remove("BELIER_WORKER_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ip netns exec starts")
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    checked(&format!("ip {}", args.join(" ")), out)
}

fn checked(what: &str, out: Output) -> Result<(), String> {
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // The processes started in it first (a failed test leaves them running).
        if let Ok(out) = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
        {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
        // Deleting the namespace deletes its end of a link, and so the link.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}
