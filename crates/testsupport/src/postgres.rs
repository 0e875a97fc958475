//! A real PostgreSQL server (Debian's postgresql) of the test's own: a fresh cluster made with
//! initdb in the test's directory, listening on a free port of 127.0.0.1 and asking a password
//! (SCRAM) there, so that a test also sees that the password never shows. Run as root (CI), the
//! server runs as Debian's `postgres` user: PostgreSQL refuses to run as root. When PostgreSQL
//! is not installed the test says it skipped; under CI (`CI=true`) that is a failure
//! (scripts/install-test-deps installs it).

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::missing::missing;
use crate::net::{free_port, wait_for_listener};
use crate::process::running_as_root;

/// The password of the server's user `belier`.
pub const PASSWORD: &str = "pg-s3cret-for-belier";

/// A running private PostgreSQL with a database `history`; stopped on drop.
pub struct Postgres {
    child: Child,
    cluster: Cluster,
}

/// The test's cluster: where its files and the server's binaries are, its port, and the user
/// the server runs as.
struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    user: Option<(u32, u32)>,
}

impl Postgres {
    /// Starts the server. `None` (said on stderr) when PostgreSQL is not installed outside CI.
    pub fn start(test: &str) -> Option<Postgres> {
        Postgres::start_with(test, false)
    }

    /// Starts a server that accepts TCP sessions over TLS only (`hostssl`), with a
    /// self-signed certificate for `127.0.0.1` and `localhost` made by openssl
    /// ([`Postgres::certificate`]). `None` as for [`Postgres::start`].
    pub fn start_tls(test: &str) -> Option<Postgres> {
        Postgres::start_with(test, true)
    }

    /// The server's certificate (PEM), when it was started with TLS.
    pub fn certificate(&self) -> PathBuf {
        self.cluster.dir.join("server.crt")
    }

    fn start_with(test: &str, tls: bool) -> Option<Postgres> {
        let Some(bin) = binaries() else {
            missing("PostgreSQL is not installed", "apt-get install postgresql");
            return None;
        };
        let dir = crate::dirs::temp_dir(&format!("postgres-{test}"));
        let user = running_as_root().then(postgres_user);
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        }
        let data = dir.join("data");
        std::fs::write(dir.join("password"), PASSWORD).unwrap();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.join("password"), Some(uid), Some(gid)).unwrap();
        }
        let pg = Cluster {
            bin,
            dir,
            port: free_port(),
            user,
        };
        let pwfile = format!("--pwfile={}", pg.dir.join("password").display());
        let data_arg = data.display().to_string();
        pg.run("initdb", &["-D", &data_arg, "-U", "belier", "-E", "UTF8"])
            .args([
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
            ])
            .arg(&pwfile)
            .checked("initdb");
        if tls {
            pg.tls_only(&data);
        }
        let log = std::fs::File::create(pg.dir.join("server.log")).unwrap();
        let port = pg.port.to_string();
        let sockets = pg.dir.display().to_string();
        let child = pg
            .run("postgres", &["-D", &data_arg, "-p", &port, "-k", &sockets])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("postgres starts");
        let pg = Postgres { child, cluster: pg };
        let up = wait_for_listener(
            ([127, 0, 0, 1], pg.cluster.port).into(),
            Duration::from_secs(30),
        );
        assert!(up, "postgres did not start:\n{}", pg.log());
        pg.cluster.wait_for_connections();
        pg.cluster
            .run(
                "createdb",
                &["-h", "127.0.0.1", "-p", &port, "-U", "belier", "history"],
            )
            .checked("createdb");
        Some(pg)
    }

    /// The database's URL, with the password.
    pub fn url(&self) -> String {
        format!(
            "postgres://belier:{PASSWORD}@127.0.0.1:{}/history",
            self.cluster.port
        )
    }

    /// The database's URL as belier shows it: without the password.
    pub fn shown_url(&self) -> String {
        format!("postgres://belier@127.0.0.1:{}/history", self.cluster.port)
    }

    /// Runs `sql` with psql on the database; its rows, one a line, columns split by `|`.
    /// Panics, with psql's message, when the statement fails.
    pub fn psql(&self, sql: &str) -> String {
        let port = self.cluster.port.to_string();
        let out = self
            .cluster
            .run("psql", &["-h", "127.0.0.1", "-p", &port, "-U", "belier"])
            .args(["-d", "history", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-c", sql])
            .checked("psql");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        self.cluster.log()
    }
}

impl Cluster {
    /// A self-signed certificate and its key, `ssl = on`, and TCP sessions over TLS only.
    fn tls_only(&self, data: &std::path::Path) {
        let (crt, key) = (self.dir.join("server.crt"), self.dir.join("server.key"));
        Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=localhost", "-addext"])
            .args(["subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&crt)
            .checked("openssl req");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        if let Some((uid, gid)) = self.user {
            std::os::unix::fs::chown(&key, Some(uid), Some(gid)).unwrap();
        }
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
        )
        .unwrap();
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .unwrap();
        writeln!(
            conf,
            "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'",
            crt.display(),
            key.display()
        )
        .unwrap();
    }

    /// The server's log so far.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// A command of the server's binaries, as the server's user, with the password given.
    fn run(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new(self.bin.join(program));
        // libpq looks for a client certificate in the user's ~/.postgresql, which the server's
        // user may not read in root's home: point it at a file that is not there.
        c.args(args)
            .env("PGPASSWORD", PASSWORD)
            .env("PGSSLCERT", self.dir.join("no-client.crt"))
            .env("PGSSLKEY", self.dir.join("no-client.key"))
            .current_dir(&self.dir);
        if let Some((uid, gid)) = self.user {
            c.uid(uid).gid(gid);
        }
        c
    }

    /// Waits until the server accepts sessions (it listens before it finishes starting).
    fn wait_for_connections(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = self.port.to_string();
        while Instant::now() < deadline {
            let ready = self
                .run("pg_isready", &["-h", "127.0.0.1", "-p", &port, "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "postgres did not accept sessions within 30 s:\n{}",
            self.log()
        );
    }
}

/// Running a command whose failure fails the test with what it said.
trait Checked {
    fn checked(&mut self, what: &str) -> Output;
}

impl Checked for Command {
    fn checked(&mut self, what: &str) -> Output {
        let out = self.output().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            out.status.success(),
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

/// The newest installed PostgreSQL's binaries (Debian keeps them off `PATH`, in
/// /usr/lib/postgresql/VERSION/bin).
fn binaries() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Debian's `postgres` user's uid and gid, from /etc/passwd.
fn postgres_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"postgres") && f.len() > 3)
        .map(|f| (f[2].parse().unwrap(), f[3].parse().unwrap()))
        .expect("the postgres user exists (made by Debian's postgresql package)")
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown, ending its sessions.
        crate::process::stop(&mut self.child, "-INT");
    }
}
