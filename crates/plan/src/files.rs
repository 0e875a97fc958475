//! Reading a file belier holds whole (a body, a plan, a data file, a HAR): a regular file only,
//! of a stated size at most.
//!
//! `std::fs::read` reads what it is given until it ends: `-D /dev/zero` read until memory ran
//! out, a named pipe with no writer blocked forever (and outlived a SIGTERM), a 1 GB body
//! took 2.1 GB. The kind of file is asked first (a `stat`, which does not block, unlike
//! opening a pipe), its size compared with the limit, and the read itself is capped, as the
//! file may grow between the two.

use std::fmt;
use std::io::Read as _;
use std::path::Path;

/// Largest body file belier sends (`-D`, a plan's `body_file` and multipart files, a targets
/// file's `@file`): 64 MiB. A body is held in memory once for the run and written whole for
/// every request, so its size is paid for each request in flight; load tests of uploads
/// rarely need more, and a larger one is more often a wrong path than a wish.
pub const MOST_BODY_BYTES: u64 = 64 << 20;

/// Largest data file (`data:` CSV or JSON lines) a plan may feed from: 256 MiB, held in
/// memory as rows for the run.
pub const MOST_DATA_BYTES: u64 = 256 << 20;

/// Largest text belier reads as a whole document: a plan, a script, a HAR file, a TLS
/// certificate or key, a capacity document: 64 MiB, far above any written by hand or by a
/// browser's export of one session.
pub const MOST_DOCUMENT_BYTES: u64 = 64 << 20;

/// Why a file could not be read whole.
#[derive(Debug)]
pub enum FileError {
    /// It could not be opened, asked about or read.
    Io(std::io::Error),
    /// It is not a regular file: what it is ("a named pipe (FIFO)", "a directory", …).
    NotRegular(&'static str),
    /// It holds more bytes than the limit.
    TooLarge {
        /// Its size in bytes (at least, when it grew while read).
        size: u64,
        /// The limit it passed.
        limit: u64,
    },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Io(e) => write!(f, "{e}"),
            FileError::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            FileError::TooLarge { size, limit } => write!(
                f,
                "it is {}, more than the {} belier reads",
                size_in_words(*size),
                size_in_words(*limit)
            ),
        }
    }
}

impl std::error::Error for FileError {}

/// `bytes` as people read sizes: `64 MiB`, `2.0 GiB`, `512 bytes`.
pub fn size_in_words(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        b => format!("{b} bytes"),
    }
}

/// What a file that is not a regular one is, in words.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

/// Checks that `path` is a regular file of at most `limit` bytes, without opening it (opening
/// a named pipe blocks until a writer comes).
pub fn check(path: &Path, limit: u64) -> Result<u64, FileError> {
    let meta = std::fs::metadata(path).map_err(FileError::Io)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular(kind(&meta)));
    }
    if meta.len() > limit {
        return Err(FileError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    Ok(meta.len())
}

/// The bytes of `path`, a regular file of at most `limit` bytes.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let size = check(path, limit)?;
    let file = std::fs::File::open(path).map_err(FileError::Io)?;
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(FileError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// The text of `path` (UTF-8), a regular file of at most `limit` bytes.
pub fn read_to_string(path: &Path, limit: u64) -> Result<String, FileError> {
    String::from_utf8(read(path, limit)?).map_err(|e| {
        FileError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it is not UTF-8 text ({e})"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(size_in_words(512), "512 bytes");
        assert_eq!(size_in_words(MOST_BODY_BYTES), "64 MiB");
        assert_eq!(size_in_words(3 << 19), "1.5 MiB");
        assert_eq!(size_in_words(2 << 30), "2.0 GiB");
    }

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = std::env::temp_dir().join(format!("belier-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("body");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read(&file, 10).unwrap(), b"0123456789");
        assert_eq!(
            read(&file, 9).unwrap_err().to_string(),
            "it is 10 bytes, more than the 9 bytes belier reads"
        );
        assert_eq!(
            read(&dir, 10).unwrap_err().to_string(),
            "it is a directory, not a regular file"
        );
        assert_eq!(
            read(Path::new("/dev/zero"), MOST_BODY_BYTES)
                .unwrap_err()
                .to_string(),
            "it is a character device, not a regular file"
        );
        assert!(matches!(
            read(&dir.join("absent"), 10),
            Err(FileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
