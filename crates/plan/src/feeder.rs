//! Data feeders: rows from a CSV file (with a header row) or JSON lines, read when the plan is
//! loaded, handed out to virtual users one row per iteration.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{PlanError, Pos};

/// How a feeder hands out its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Each user walks the rows in order from its own starting row (user `v` starts at row
    /// `v mod rows`), wrapping at the end.
    Sequential,
    /// Each iteration takes a row at random (from the user's seeded generator).
    Random,
    /// Every row is used at most once across the whole run (a shared cursor); a user that
    /// finds none left stops.
    Unique,
}

impl Order {
    /// The name plans use.
    pub fn name(self) -> &'static str {
        match self {
            Order::Sequential => "sequential",
            Order::Random => "random",
            Order::Unique => "unique",
        }
    }
}

/// A data source's rows, all in memory.
#[derive(Clone, Debug)]
pub struct Feeder {
    /// The name templates use: `{{ NAME.column }}`.
    pub name: String,
    /// The data file, as the plan resolved it.
    pub file: PathBuf,
    /// How rows are handed out.
    pub order: Order,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Feeder {
    /// Reads `file`: JSON lines when it ends in `.jsonl`/`.ndjson`, CSV otherwise.
    pub(crate) fn read(name: &str, file: &Path, order: Order) -> Result<Feeder, PlanError> {
        let bytes = crate::files::read(file, crate::files::MOST_DATA_BYTES).map_err(|e| {
            PlanError::new(
                file,
                Pos { line: 1, col: 1 },
                format!("cannot read data file for `{name}`: {e}"),
            )
        })?;
        let jsonl = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("ndjson"));
        let (columns, rows) = if jsonl {
            json_lines(&bytes, file)?
        } else {
            csv_rows(&bytes, file)?
        };
        if rows.is_empty() {
            return Err(PlanError::new(
                file,
                Pos { line: 1, col: 1 },
                format!("data `{name}` has no rows"),
            ));
        }
        Ok(Feeder {
            name: name.to_string(),
            file: file.to_path_buf(),
            order,
            columns,
            rows,
        })
    }

    /// Column names, in file order (JSON lines: the first line's keys).
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows (never true for a loaded feeder).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Keeps only the rows of `shard` when the feeder is unique (row `r` is shard
    /// `r mod N`'s), so that across a run split into shards every row is still used at most
    /// once. Other orders keep every row: sequential and random feeders may repeat rows
    /// anyway. A shard may be left with no row (fewer rows than shards): its users find none.
    pub(crate) fn keep_shard(&mut self, shard: belier_engine::Shard) {
        if self.order == Order::Unique {
            let mut row = 0u64;
            self.rows.retain(|_| {
                row += 1;
                shard.owns(row - 1)
            });
        }
    }

    /// Index of the column `name`.
    pub(crate) fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The value of `column` in `row`.
    pub fn value(&self, row: usize, column: usize) -> Option<&str> {
        self.rows.get(row)?.get(column).map(String::as_str)
    }

    /// The row for user `vu`'s `draw`-th draw; `None` when a unique feeder has run out.
    pub fn draw(
        &self,
        vu: u64,
        draw: u64,
        rng: &mut fastrand::Rng,
        cursor: &AtomicUsize,
    ) -> Option<usize> {
        let n = self.rows.len();
        if n == 0 {
            return None;
        }
        match self.order {
            Order::Sequential => {
                let n64 = n as u64;
                Some(((vu % n64 + draw % n64) % n64) as usize)
            }
            Order::Random => Some(rng.usize(..n)),
            Order::Unique => {
                // fetch_update so the cursor stops at `n` instead of creeping towards overflow
                // as exhausted users keep asking.
                cursor
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                        (c < n).then_some(c + 1)
                    })
                    .ok()
            }
        }
    }
}

fn csv_rows(bytes: &[u8], file: &Path) -> Result<(Vec<String>, Vec<Vec<String>>), PlanError> {
    let at = |line: u64, message: String| {
        PlanError::new(
            file,
            Pos {
                line: line.max(1) as usize,
                col: 1,
            },
            message,
        )
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header = reader
        .headers()
        .map_err(|e| at(1, format!("CSV header row: {e}")))?
        .clone();
    let columns: Vec<String> = header.iter().map(|c| c.trim().to_string()).collect();
    if columns.iter().all(String::is_empty) {
        return Err(at(1, "expected a header row naming the columns".into()));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(1, |p| p.line());
            let why = match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => format!("expected {expected_len} fields like the header row, found {len}"),
                _ => e.to_string(),
            };
            at(line, why)
        })?;
        rows.push(record.iter().map(str::to_string).collect());
    }
    Ok((columns, rows))
}

fn json_lines(bytes: &[u8], file: &Path) -> Result<(Vec<String>, Vec<Vec<String>>), PlanError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| PlanError::new(file, Pos { line: 1, col: 1 }, format!("not UTF-8: {e}")))?;
    let mut columns: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = |col: usize, message: String| {
            PlanError::new(
                file,
                Pos {
                    line: i + 1,
                    col: col.max(1),
                },
                message,
            )
        };
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| at(e.column(), format!("JSON: {e}")))?;
        let serde_json::Value::Object(object) = value else {
            return Err(at(1, "expected a JSON object on each line".into()));
        };
        let columns = columns.get_or_insert_with(|| object.keys().cloned().collect());
        let mut row = Vec::with_capacity(columns.len());
        for column in columns.iter() {
            match object.get(column) {
                Some(serde_json::Value::String(s)) => row.push(s.clone()),
                Some(other) => row.push(other.to_string()),
                None => {
                    return Err(at(
                        1,
                        format!("missing key `{column}` (the first line has it)"),
                    ))
                }
            }
        }
        rows.push(row);
    }
    Ok((columns.unwrap_or_default(), rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feeder(order: Order, n: usize) -> Feeder {
        Feeder {
            name: "d".into(),
            file: "d.csv".into(),
            order,
            columns: vec!["id".into()],
            rows: (0..n).map(|i| vec![i.to_string()]).collect(),
        }
    }

    #[test]
    fn csv_and_json_lines_read_with_errors_located() {
        let (cols, rows) = csv_rows(b"user,pass\nann,1\nbob,2\n", Path::new("u.csv")).unwrap();
        assert_eq!(cols, ["user", "pass"]);
        assert_eq!(rows, [["ann", "1"], ["bob", "2"]]);
        let err = csv_rows(b"user,pass\nann,1\nbob\n", Path::new("u.csv")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "u.csv:3:1: expected 2 fields like the header row, found 1"
        );

        let (cols, rows) = json_lines(
            b"{\"a\": \"x\", \"b\": 2}\n\n{\"a\": \"y\", \"b\": true}\n",
            Path::new("d.jsonl"),
        )
        .unwrap();
        assert_eq!(cols, ["a", "b"]);
        assert_eq!(rows, [["x", "2"], ["y", "true"]]);
        let err = json_lines(b"{\"a\": 1}\n{\"b\": 2}\n", Path::new("d.jsonl")).unwrap_err();
        assert!(
            err.to_string().starts_with("d.jsonl:2:1: missing key `a`"),
            "{err}"
        );
        let err = json_lines(b"{\"a\": 1}\n[1]\n", Path::new("d.jsonl")).unwrap_err();
        assert!(err.to_string().starts_with("d.jsonl:2:1:"), "{err}");
        let err = json_lines(b"{\"a\": 1}\n{oops\n", Path::new("d.jsonl")).unwrap_err();
        assert!(err.to_string().starts_with("d.jsonl:2:2: JSON"), "{err}");
    }

    #[test]
    fn sequential_starts_per_user_and_wraps() {
        let f = feeder(Order::Sequential, 3);
        let cursor = AtomicUsize::new(0);
        let mut rng = fastrand::Rng::with_seed(1);
        let rows: Vec<_> = (0..4)
            .map(|d| f.draw(1, d, &mut rng, &cursor).unwrap())
            .collect();
        assert_eq!(rows, [1, 2, 0, 1]);
        assert_eq!(f.draw(5, 0, &mut rng, &cursor), Some(2));
    }

    #[test]
    fn random_stays_in_range() {
        let f = feeder(Order::Random, 4);
        let cursor = AtomicUsize::new(0);
        let mut rng = fastrand::Rng::with_seed(9);
        let mut seen = [0; 4];
        for d in 0..400 {
            seen[f.draw(0, d, &mut rng, &cursor).unwrap()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }

    #[test]
    fn unique_rows_are_dealt_to_shards() {
        use belier_engine::Shard;
        let rows_of = |index, order| {
            let mut f = feeder(order, 7);
            f.keep_shard(Shard::new(index, 3).unwrap());
            f.rows.iter().map(|r| r[0].clone()).collect::<Vec<_>>()
        };
        assert_eq!(rows_of(0, Order::Unique), ["0", "3", "6"]);
        assert_eq!(rows_of(1, Order::Unique), ["1", "4"]);
        assert_eq!(rows_of(2, Order::Unique), ["2", "5"]);
        // Rows that may repeat anyway stay whole.
        assert_eq!(rows_of(2, Order::Sequential).len(), 7);
        assert_eq!(rows_of(2, Order::Random).len(), 7);
    }

    #[test]
    fn unique_runs_out_once() {
        let f = feeder(Order::Unique, 5);
        let cursor = AtomicUsize::new(0);
        let mut rng = fastrand::Rng::with_seed(1);
        let got: Vec<_> = (0..8).map(|d| f.draw(0, d, &mut rng, &cursor)).collect();
        assert_eq!(
            got,
            [
                Some(0),
                Some(1),
                Some(2),
                Some(3),
                Some(4),
                None,
                None,
                None
            ]
        );
        assert_eq!(cursor.load(Ordering::Relaxed), 5);
    }
}
