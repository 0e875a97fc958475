//! The watchers that need nothing of a terminal: each in its own module. Those that draw or
//! print (progress line, dashboard, web console, exporter) are the CLI's.

pub mod host;
pub mod raw;
pub mod results_file;
pub mod window;
