//! `belier web`'s form: each field becomes the flag it stands for, and the command line so made
//! goes through the same parsing and validation as one typed in a shell, so a form value gets
//! the flag's checks and error text. Each run keeps its results file and HTML report in a
//! directory of its own under `--runs-dir`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Mutex;

use belier_console::Form;
use clap::Parser as _;

use crate::args::{Cli, Command};
use crate::settings::InputError;

/// Plan files the form offers: those of the working directory with these extensions.
/// A run the form asked for, ready to go.
pub struct Job {
    pub settings: crate::settings::Settings,
    pub plan: Option<crate::plan::Prepared>,
}

const PLAN_EXTENSIONS: [&str; 2] = ["yaml", "yml"];

/// Starts the form's runs on `belier web`'s main thread.
pub struct Launcher {
    jobs: Mutex<Sender<Job>>,
    runs_dir: PathBuf,
    cores: usize,
    /// Runs launched so far, which numbers their directories.
    launched: AtomicU64,
}

impl Launcher {
    /// Sends runs to `jobs`; each keeps its files in a new directory under `runs_dir`.
    pub fn new(jobs: Sender<Job>, runs_dir: PathBuf, cores: usize) -> Result<Launcher, InputError> {
        // Numbered after those already there, so a console started again keeps older runs.
        let existing = std::fs::read_dir(&runs_dir)
            .map_err(|e| {
                InputError::new(
                    "--runs-dir <DIR>",
                    runs_dir.display(),
                    format!("cannot read it: {e}"),
                )
            })?
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("run-")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        Ok(Launcher {
            jobs: Mutex::new(jobs),
            runs_dir,
            cores,
            launched: AtomicU64::new(existing),
        })
    }
}

impl belier_console::Launcher for Launcher {
    fn launch(&self, form: Form) -> Result<(), String> {
        let n = self.launched.load(Ordering::SeqCst) + 1;
        let dir = self.runs_dir.join(format!("run-{n}"));
        let argv = argv(&form, &dir)?;
        let job = job(argv, self.cores).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.launched.store(n, Ordering::SeqCst);
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(job)
            .map_err(|_| "the console is shutting down".to_string())
    }

    fn plans(&self) -> Vec<String> {
        plans(Path::new("."))
    }
}

/// The plan files directly in `dir`, sorted.
fn plans(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            let ext = Path::new(&name).extension()?.to_str()?;
            (e.file_type().ok()?.is_file() && PLAN_EXTENSIONS.contains(&ext)).then_some(name)
        })
        .collect();
    found.sort();
    found
}

/// The command line the form stands for, its files in `dir`.
fn argv(form: &Form, dir: &Path) -> Result<Vec<String>, String> {
    let mut argv = vec!["belier".to_string()];
    let mut flag = |name: &str, value: &str| {
        if !value.trim().is_empty() {
            argv.push(name.into());
            argv.push(value.trim().into());
        }
    };
    let plan = !form.plan.is_empty();
    let open = match form.model.as_str() {
        "" | "closed" => false,
        "open" => true,
        other => return Err(format!("load: '{other}' is neither 'closed' nor 'open'")),
    };
    if plan {
        // Only a plan the form offered: a name of the working directory, no path.
        if !plans(Path::new(".")).contains(&form.plan) {
            return Err(format!(
                "plan: '{}' is not a plan file of the working directory",
                form.plan
            ));
        }
        for (field, value) in [
            ("url", &form.url),
            ("method", &form.method),
            ("body", &form.body),
            ("stages", &form.stages),
        ] {
            if !value.is_empty() {
                return Err(format!("{field}: a plan says it; leave it empty"));
            }
        }
    }
    if open && form.rate.trim().is_empty() {
        return Err("--rate <R>: the open loop needs a rate".into());
    }
    if plan {
        flag("run", &form.plan);
    } else {
        flag("--method", &form.method);
        flag("--body", &form.body);
        flag("--stages", &form.stages);
    }
    for header in form.headers.lines().filter(|h| !h.trim().is_empty()) {
        flag("--header", header);
    }
    match (open, plan) {
        (true, _) => flag("--rate", &form.rate),
        (false, true) => flag("--vus", &form.connections),
        (false, false) => flag("--connections", &form.connections),
    }
    flag("--duration", &form.duration);
    flag("--name", &form.name);
    flag("--save", &dir.join("results.jsonl").to_string_lossy());
    flag("--html", &dir.join("report.html").to_string_lossy());
    if !plan {
        // Last, so that a URL starting with '-' is still a URL and an empty one is missing.
        argv.push("--".into());
        if !form.url.trim().is_empty() {
            argv.push(form.url.trim().into());
        }
    }
    Ok(argv)
}

/// Parses `argv` as the command line and validates it into a run.
fn job(argv: Vec<String>, cores: usize) -> anyhow::Result<Job> {
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let rendered = e.render().to_string();
        anyhow::anyhow!(
            "{}",
            rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("error: invalid form")
                .trim_start_matches("error: ")
        )
    })?;
    match cli.command {
        None => Ok(Job {
            settings: crate::settings::from_args(cli.load, cores)?,
            plan: None,
        }),
        Some(Command::Run(args)) => {
            let (settings, prepared) = crate::plan::prepare(*args, cores)?;
            Ok(Job {
                settings,
                plan: Some(prepared),
            })
        }
        Some(_) => anyhow::bail!("not a run"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Form {
        let mut v = serde_json::Map::new();
        for (k, val) in pairs {
            v.insert((*k).into(), (*val).into());
        }
        serde_json::from_value(serde_json::Value::Object(v)).unwrap()
    }

    #[test]
    fn each_field_becomes_its_flag() {
        let f = form(&[
            ("url", "http://127.0.0.1:1/x"),
            ("method", "POST"),
            ("headers", "A: 1\n\nB: 2"),
            ("body", "hi"),
            ("model", "open"),
            ("rate", "200"),
            ("connections", "9"),
            ("duration", "5s"),
        ]);
        let argv = argv(&f, Path::new("d")).unwrap();
        assert_eq!(
            argv.join(" "),
            "belier --method POST --body hi --header A: 1 --header B: 2 --rate 200 --duration 5s \
             --save d/results.jsonl --html d/report.html -- http://127.0.0.1:1/x"
        );
    }

    #[test]
    fn a_form_value_gets_the_flags_error() {
        let bad = |pairs: &[(&str, &str)]| {
            let argv = argv(&form(pairs), Path::new("d"))?;
            job(argv, 1).map(|_| ()).map_err(|e| e.to_string())
        };
        let e = bad(&[("url", "http://127.0.0.1:1/"), ("connections", "0")]).unwrap_err();
        assert!(e.contains("'--connections <N>'"), "{e}");
        let e = bad(&[("url", "http://127.0.0.1:1/"), ("duration", "soon")]).unwrap_err();
        assert!(e.contains("--duration"), "{e}");
        let e = bad(&[]).unwrap_err();
        assert!(e.contains("<URL>"), "{e}");
        let e = bad(&[("url", "http://127.0.0.1:1/"), ("model", "open")]).unwrap_err();
        assert!(e.contains("--rate"), "{e}");
        let e = bad(&[("plan", "../etc/passwd")]).unwrap_err();
        assert!(
            e.contains("not a plan file of the working directory"),
            "{e}"
        );
        assert!(bad(&[("url", "http://127.0.0.1:1/"), ("connections", "3")]).is_ok());
    }
}
