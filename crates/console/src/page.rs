//! The page, its script and its styles, compiled into the binary: the console works offline.

/// The page.
pub const HTML: &str = include_str!("page/index.html");
/// Its script: the API calls, the tables and the SVG charts.
pub const SCRIPT: &str = include_str!("page/console.js");
/// Its styles.
pub const STYLE: &str = include_str!("page/console.css");
