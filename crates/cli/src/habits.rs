//! Habits from other load testers that mean something else here: flags that parse, but are
//! likely not what the user meant (wrk's `-d 30s` is a duration, belier's `-d` a request body;
//! ab's `-t 30` a time limit, belier's `-t` threads), and several URLs, which other tools take
//! and belier takes from a targets file. Pure: the caller prints.

use crate::args::LoadArgs;

/// Warnings about `args` worth printing before the run starts; `cores`: this machine's.
pub fn load_warnings(args: &LoadArgs, cores: usize) -> Vec<String> {
    let mut warnings = Vec::new();
    let request = &args.request;
    if let Some(body) = &request.body {
        let method = request.method.to_ascii_uppercase();
        if (method == "GET" || method == "HEAD") && looks_like_duration(body) {
            warnings.push(format!(
                "-d {body} is the request body of each {method} here, not a duration (wrk's -d): \
                 for a run of {body}, use -z {body}"
            ));
        }
    }
    if let Some(threads) = args.sending.threads.filter(|&t| t > cores) {
        warnings.push(format!(
            "-t {threads} starts {threads} worker threads on a {cores}-core host (ab's -t is a \
             time limit: for a run of {threads} s, use -z {threads}s)"
        ));
    }
    warnings
}

/// The error for a command line that names several URLs, if `argv` (program name first) does.
pub fn several_urls(argv: impl IntoIterator<Item = String>) -> Option<String> {
    let urls: Vec<String> = argv
        .into_iter()
        .skip(1)
        .filter(|a| a.starts_with("http://") || a.starts_with("https://"))
        .collect();
    (urls.len() > 1).then(|| {
        format!(
            "several URLs given ({}): a run takes one URL on the command line; for several, \
             list them in a targets file (one 'METHOD URL' a line) and pass --targets FILE",
            urls.join(", ")
        )
    })
}

/// The error for `--web ADDR` (the address apart, as most flags take their value), which the
/// parser cannot place (`--web`'s address is optional, so only `--web=ADDR` gives one), if
/// `argv` (program name first) has it.
pub fn web_address_apart(argv: impl IntoIterator<Item = String>) -> Option<String> {
    let argv: Vec<String> = argv.into_iter().collect();
    argv.windows(2)
        .skip(1)
        .find(|w| {
            w[0] == "--web"
                && !w[1].starts_with('-')
                && !w[1].starts_with("http://")
                && !w[1].starts_with("https://")
        })
        .map(|w| {
            format!(
                "--web takes its address after '=': write --web={} (a bare --web listens on {})",
                w[1],
                belier_console::DEFAULT_ADDR
            )
        })
}

/// `30s`, `1.5m`, `500ms`, `2h`: a number and a time unit, nothing else.
fn looks_like_duration(s: &str) -> bool {
    let s = s.trim();
    let unit_at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(unit_at);
    number.parse::<f64>().is_ok() && ["ms", "s", "m", "h", "sec", "min", "us", "µs"].contains(&unit)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::args::Cli;

    fn warnings_for(argv: &[&str], cores: usize) -> Vec<String> {
        let cli = Cli::try_parse_from(argv).unwrap();
        load_warnings(&cli.load, cores)
    }

    #[test]
    fn a_web_address_apart_is_told_to_take_an_equals_sign() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let why = web_address_apart(argv(&["belier", "http://h/", "--web", "127.0.0.1:8000"]));
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("write --web=127.0.0.1:8000")),
            "{why:?}"
        );
        for fine in [
            &["belier", "--web", "http://h/"][..],
            &["belier", "http://h/", "--web", "-n", "5"],
            &["belier", "http://h/", "--web=127.0.0.1:8000"],
            &["belier", "web", "127.0.0.1:8000"],
        ] {
            assert_eq!(web_address_apart(argv(fine)), None, "{fine:?}");
        }
    }

    #[test]
    fn durations_are_numbers_with_a_time_unit() {
        for yes in ["30s", "1.5m", "500ms", "2h", " 10s ", "3min"] {
            assert!(looks_like_duration(yes), "{yes}");
        }
        for no in [
            "",
            "s",
            "30",
            "{\"a\":1}",
            "30 s",
            "1.2.3s",
            "30sx",
            "name=10s",
        ] {
            assert!(!looks_like_duration(no), "{no}");
        }
    }

    #[test]
    fn a_duration_as_the_body_of_a_get_is_a_wrk_habit() {
        let w = warnings_for(&["belier", "-d", "30s", "http://127.0.0.1:1/"], 2);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("-d 30s is the request body of each GET here"),
            "{w:?}"
        );
        assert!(w[0].ends_with("use -z 30s"), "{w:?}");
        // A POST of "30s" is what it says; a GET with a real body too.
        assert!(warnings_for(&["belier", "-m", "POST", "-d", "30s", "http://x/"], 2).is_empty());
        assert!(warnings_for(&["belier", "-d", "{}", "http://x/"], 2).is_empty());
    }

    #[test]
    fn more_threads_than_cores_may_be_abs_time_limit() {
        let w = warnings_for(&["belier", "-t", "30", "http://x/"], 2);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("ab's -t is a time limit"), "{w:?}");
        assert!(warnings_for(&["belier", "-t", "2", "http://x/"], 2).is_empty());
        assert!(warnings_for(&["belier", "http://x/"], 2).is_empty());
    }

    #[test]
    fn several_urls_point_to_a_targets_file() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = several_urls(argv(&["belier", "-n", "5", "http://a/1", "https://b/2"])).unwrap();
        assert!(e.contains("(http://a/1, https://b/2)"), "{e}");
        assert!(e.contains("--targets FILE"), "{e}");
        assert_eq!(several_urls(argv(&["belier", "http://a/1"])), None);
    }
}
