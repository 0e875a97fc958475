//! What belier's tests share, in one place rather than copied into every test file: temp
//! dirs, the belier binary and its running processes, ports, the test servers and the real
//! components the tests start (nginx, Prometheus, a Pushgateway and InfluxDB, Chromium over
//! WebDriver, gunicorn, curl), hostile clients, and the property tests' near misses.
//!
//! A library cannot see `env!("CARGO_BIN_EXE_belier")` (cargo sets it only while it compiles an
//! integration test of the crate that has the binary), so a test file names its binary once
//! with [`binary!`], and what runs belier takes that [`Binary`].
//!
//! A real component that is not installed is never passed over in silence: outside CI the test
//! says `NAME: skipped: <why> (<how to install>)` and returns; under CI (`CI=true`) it fails
//! ([`missing()`]).

pub mod apache;
pub mod argv;
pub mod binary;
pub mod capacity;
pub mod curl;
pub mod daemons;
pub mod demo;
pub mod dirs;
pub mod dnsmasq;
pub mod grpc;
pub mod gunicorn;
pub mod h3;
pub mod hostile;
pub mod missing;
pub mod near_miss;
pub mod net;
pub mod netns;
pub mod nginx;
pub mod noise;
pub mod otelcol;
pub mod postgres;
pub mod process;
pub mod prometheus;
pub mod python;
pub mod shop;
pub mod webdriver;
pub mod ws;

pub use binary::{assert_exit, ok, Binary};
pub use dirs::{fresh_dir, temp_dir};
pub use missing::{find_program, missing};
pub use net::{free_port, wait_for_listener};
pub use process::Belier;

/// Names the belier binary cargo built for this test binary, as `BELIER` (a [`Binary`]), and
/// with no argument `belier()` too, a [`std::process::Command`] for it.
///
/// ```ignore
/// belier_testsupport::binary!();        // BELIER and fn belier() -> Command
/// belier_testsupport::binary!(BELIER);  // BELIER alone, where the file has its own belier()
/// ```
#[macro_export]
macro_rules! binary {
    () => {
        $crate::binary!(BELIER);
        /// A command for the belier under test.
        #[allow(dead_code)]
        fn belier() -> ::std::process::Command {
            BELIER.command()
        }
    };
    (BELIER) => {
        /// The belier binary under test (cargo builds it before this test binary).
        #[allow(dead_code)]
        const BELIER: $crate::Binary = $crate::Binary::new(env!("CARGO_BIN_EXE_belier"));
    };
}
