//! The files a run reads travel with its job, so that a worker needs neither a shared
//! filesystem nor the coordinator's working directory. The coordinator gathers them
//! ([`gather`], [`MAX_BYTES`] in all at most); the worker writes them to a directory of the
//! run's own ([`Received`]), where the run reads them by the paths the coordinator knows
//! them by, and which goes when the run is over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Most bytes of files one job carries (each worker gets them all): beyond, the run's data
/// belongs on the workers' own disks.
pub const MAX_BYTES: u64 = 64 << 20;

/// A file the run reads (a plan's data, body, script or TLS file; a flag's body or targets
/// file), sent with the job to a worker that need not have it (gathered and written back here).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentFile {
    /// The path the run names it by, on the coordinator (a plan's files resolved against the
    /// plan's directory, as the plan resolves them).
    pub path: String,
    /// Its bytes, in standard base64.
    pub base64: String,
}

/// Why the run's files cannot go with it.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// A file could not be read.
    #[error("cannot read {path} to send it to the workers: {why}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// The files are too large together.
    #[error(
        "{path} ({size} bytes) takes the files sent to the workers to {total} bytes, over the {} MiB a run's files may hold: \
         put large data on the workers' own disks and name it by an absolute path",
        MAX_BYTES >> 20
    )]
    TooLarge {
        /// The file that crosses the bound.
        path: String,
        /// Its size.
        size: u64,
        /// The files' size with it.
        total: u64,
    },
}

/// Reads `paths` (each once) to send them with a job; the whole is at most [`MAX_BYTES`].
pub fn gather(paths: &[PathBuf]) -> Result<Vec<SentFile>, FilesError> {
    let mut sent: Vec<SentFile> = Vec::new();
    let mut total = 0u64;
    for path in paths {
        let name = path.display().to_string();
        if sent.iter().any(|s| s.path == name) {
            continue;
        }
        let bytes = std::fs::read(path).map_err(|e| FilesError::Read {
            path: name.clone(),
            why: e.to_string(),
        })?;
        let size = bytes.len() as u64;
        total += size;
        if total > MAX_BYTES {
            return Err(FilesError::TooLarge {
                path: name,
                size,
                total,
            });
        }
        sent.push(SentFile {
            path: name,
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        });
    }
    Ok(sent)
}

/// A job's files as written on the worker, in a directory of their own that is removed when
/// this is dropped (once the run is over).
#[derive(Debug)]
pub struct Received {
    dir: PathBuf,
    copies: HashMap<PathBuf, PathBuf>,
}

impl Received {
    /// Writes `files` to `dir` (created, and removed when the result is dropped).
    pub fn write(files: &[SentFile], dir: &Path) -> Result<Received, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut received = Received {
            dir: dir.to_path_buf(),
            copies: HashMap::new(),
        };
        for f in files {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&f.base64)
                .map_err(|e| format!("the file {} came unreadable: {e}", f.path))?;
            received.insert(&f.path, &bytes)?;
        }
        Ok(received)
    }

    /// Writes one more file, known by `path` on the coordinator.
    pub fn insert(&mut self, path: &str, bytes: &[u8]) -> Result<(), String> {
        // Numbered, so that files of one name in different directories stay apart; the name
        // itself is kept, since what reads a file may go by its extension.
        let name = Path::new(path)
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        let local = self.dir.join(format!("{}-{name}", self.copies.len() + 1));
        std::fs::write(&local, bytes)
            .map_err(|e| format!("cannot write {}: {e}", local.display()))?;
        self.copies.insert(PathBuf::from(path), local);
        Ok(())
    }

    /// Where each file is here, by the path the coordinator knows it by.
    pub fn copies(&self) -> &HashMap<PathBuf, PathBuf> {
        &self.copies
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("belier-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn files_arrive_under_the_coordinators_names_and_go_with_the_run() {
        let here = dir("here");
        let (a, b) = (here.join("a/data.csv"), here.join("b/data.csv"));
        for (p, text) in [(&a, "x\n1\n"), (&b, "x\n2\n")] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let sent = gather(&[a.clone(), b.clone(), a.clone()]).unwrap();
        assert_eq!(sent.len(), 2, "each file once");
        let there = dir("there").join("run-1");
        let received = Received::write(&sent, &there).unwrap();
        let copy_a = &received.copies()[&a];
        assert_eq!(std::fs::read_to_string(copy_a).unwrap(), "x\n1\n");
        assert_eq!(
            std::fs::read_to_string(&received.copies()[&b]).unwrap(),
            "x\n2\n"
        );
        assert!(copy_a.starts_with(&there) && copy_a.extension().unwrap() == "csv");
        drop(received);
        assert!(!there.exists(), "removed with the run");
        let _ = std::fs::remove_dir_all(here);
    }

    #[test]
    fn the_file_that_crosses_the_bound_is_named() {
        let here = dir("bound");
        let small = here.join("small.bin");
        let big = here.join("big.bin");
        std::fs::write(&small, vec![0u8; 1024]).unwrap();
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_BYTES - 1023)
            .unwrap();
        let e = gather(&[small.clone(), big.clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("big.bin") && e.contains("64 MiB"), "{e}");
        assert!(gather(&[big]).is_ok(), "up to the bound");
        let missing = gather(&[here.join("missing.csv")]).unwrap_err().to_string();
        assert!(missing.contains("missing.csv"), "{missing}");
        let _ = std::fs::remove_dir_all(here);
    }
}
