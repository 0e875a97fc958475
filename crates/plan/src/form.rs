//! Form bodies: `form:` (application/x-www-form-urlencoded) and `multipart:`
//! (multipart/form-data, RFC 7578), both made of templated fields and, for multipart, files
//! read when the plan loads.
//!
//! Multipart bodies are assembled here by hand: the format is a few lines of RFC 7578, and the
//! maintained Rust crates either only parse it (multer) or come inside an HTTP client
//! (reqwest) or an old hyper stack (common-multipart-rfc7578), none of which fits a request
//! built from pre-rendered bytes. Everything that does not change per request (boundaries, part
//! headers, file contents) is laid out once at load into fixed chunks, so a request copies
//! them and renders only its templated fields. URL-encoding uses `form_urlencoded`, the
//! `url` crate's own encoder.

use std::sync::Arc;

use crate::template::{Env, Template};

/// Length of the random part of a multipart boundary (letters and digits).
const BOUNDARY_RANDOM: usize = 32;

/// A `form:` body: fields in plan order.
#[derive(Clone, Debug)]
pub struct Form {
    /// Each field's name and value.
    pub fields: Vec<(String, Template)>,
}

impl Form {
    /// The encoded body when no field changes per request.
    pub fn fixed(&self) -> Option<Vec<u8>> {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (name, value) in &self.fields {
            s.append_pair(name, &value.as_literal()?);
        }
        Some(s.finish().into_bytes())
    }

    /// Appends the encoded body to `out`; `Err` when a variable had no value.
    pub fn render(&self, env: &mut Env<'_>, out: &mut Vec<u8>) -> Result<(), usize> {
        let mut missing = None;
        let mut value = String::new();
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (name, template) in &self.fields {
            value.clear();
            if let Err(slot) = template.render(env, &mut value) {
                missing.get_or_insert(slot);
            }
            s.append_pair(name, &value);
        }
        out.extend_from_slice(s.finish().as_bytes());
        missing.map_or(Ok(()), Err)
    }
}

/// One part of a `multipart:` body, as the plan gives it.
#[derive(Clone, Debug)]
pub(crate) enum Part {
    /// A text field.
    Field { name: String, value: Template },
    /// A file read when the plan loaded.
    File {
        name: String,
        filename: String,
        content_type: String,
        bytes: Arc<[u8]>,
    },
}

/// A piece of an assembled multipart body.
#[derive(Clone, Debug)]
enum Chunk {
    Fixed(Vec<u8>),
    Field(Template),
}

/// A `multipart:` body laid out at load: fixed bytes between the templated field values.
#[derive(Clone, Debug)]
pub struct Multipart {
    /// The boundary, for the Content-Type header.
    pub boundary: String,
    chunks: Vec<Chunk>,
    /// Text fields and files, for `describe`: (name, file and size if a file).
    pub parts: Vec<(String, Option<(String, usize)>)>,
}

impl Multipart {
    /// Lays out `parts` with a boundary found in none of their fixed contents.
    pub(crate) fn new(parts: Vec<Part>, rng: &mut fastrand::Rng) -> Multipart {
        let boundary = loop {
            let random: String = (0..BOUNDARY_RANDOM).map(|_| rng.alphanumeric()).collect();
            let candidate = format!("belier-{random}");
            if !parts.iter().any(|p| contains(p, candidate.as_bytes())) {
                break candidate;
            }
        };
        let mut chunks = Vec::new();
        let mut fixed = Vec::new();
        let mut shown = Vec::new();
        for part in parts {
            fixed.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            match part {
                Part::Field { name, value } => {
                    fixed.extend_from_slice(
                        format!(
                            "Content-Disposition: form-data; name=\"{}\"\r\n\r\n",
                            quoted(&name)
                        )
                        .as_bytes(),
                    );
                    match value.as_literal() {
                        Some(text) => fixed.extend_from_slice(text.as_bytes()),
                        None => {
                            chunks.push(Chunk::Fixed(std::mem::take(&mut fixed)));
                            chunks.push(Chunk::Field(value));
                        }
                    }
                    shown.push((name, None));
                }
                Part::File {
                    name,
                    filename,
                    content_type,
                    bytes,
                } => {
                    fixed.extend_from_slice(
                        format!(
                            "Content-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {content_type}\r\n\r\n",
                            quoted(&name),
                            quoted(&filename)
                        )
                        .as_bytes(),
                    );
                    fixed.extend_from_slice(&bytes);
                    shown.push((name, Some((filename, bytes.len()))));
                }
            }
            fixed.extend_from_slice(b"\r\n");
        }
        fixed.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        chunks.push(Chunk::Fixed(fixed));
        Multipart {
            boundary,
            chunks,
            parts: shown,
        }
    }

    /// The whole body when no field changes per request.
    #[cfg(test)]
    pub fn fixed(&self) -> Option<&[u8]> {
        match self.chunks.as_slice() {
            [Chunk::Fixed(bytes)] => Some(bytes),
            _ => None,
        }
    }

    /// Variable slots the fields read.
    pub fn vars(&self) -> impl Iterator<Item = usize> + '_ {
        self.chunks
            .iter()
            .flat_map(|c| match c {
                Chunk::Field(t) => Some(t.vars()),
                Chunk::Fixed(_) => None,
            })
            .flatten()
    }

    /// Appends the body to `out`; `Err` when a variable had no value.
    pub fn render(&self, env: &mut Env<'_>, out: &mut Vec<u8>) -> Result<(), usize> {
        let mut missing = None;
        let mut value = String::new();
        for chunk in &self.chunks {
            match chunk {
                Chunk::Fixed(bytes) => out.extend_from_slice(bytes),
                Chunk::Field(t) => {
                    value.clear();
                    if let Err(slot) = t.render(env, &mut value) {
                        missing.get_or_insert(slot);
                    }
                    out.extend_from_slice(value.as_bytes());
                }
            }
        }
        missing.map_or(Ok(()), Err)
    }
}

/// Whether a part's fixed content holds `needle`.
fn contains(part: &Part, needle: &[u8]) -> bool {
    let hay: &[u8] = match part {
        Part::Field { value, .. } => match value.as_literal() {
            Some(text) => return text.as_bytes().windows(needle.len()).any(|w| w == needle),
            None => return false,
        },
        Part::File { bytes, .. } => bytes,
    };
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A name or file name inside a quoted `Content-Disposition` parameter: `"`, CR and LF
/// percent-encoded, as browsers send them (HTML's multipart/form-data encoding).
fn quoted(text: &str) -> String {
    text.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Reference, Segment};

    fn template(text: &str) -> Template {
        Template::compile(text, &mut |r| match r {
            Reference::Variable("who") => Ok(Segment::Var(0)),
            Reference::Builtin(s) => Ok(s),
            _ => Err("unknown".into()),
        })
        .unwrap()
    }

    fn render(
        f: impl Fn(&mut Env<'_>, &mut Vec<u8>) -> Result<(), usize>,
        who: Option<&str>,
    ) -> (Vec<u8>, Result<(), usize>) {
        let vars = [who.map(str::to_string)];
        let mut rng = fastrand::Rng::with_seed(1);
        let mut env = Env {
            vars: &vars,
            feeders: &[],
            rows: &[],
            vu: 4,
            iteration: 0,
            rng: &mut rng,
        };
        let mut out = Vec::new();
        let r = f(&mut env, &mut out);
        (out, r)
    }

    #[test]
    fn form_fields_are_url_encoded_in_order() {
        let form = Form {
            fields: vec![
                ("q".into(), template("a b&c=d/é+")),
                ("user name".into(), template("{{ who }}-{{ vu }}")),
            ],
        };
        assert_eq!(form.fixed(), None);
        let (out, r) = render(|e, o| form.render(e, o), Some("ann"));
        assert_eq!(r, Ok(()));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "q=a+b%26c%3Dd%2F%C3%A9%2B&user+name=ann-4"
        );
        let (out, r) = render(|e, o| form.render(e, o), None);
        assert_eq!(
            (String::from_utf8(out).unwrap().as_str(), r),
            ("q=a+b%26c%3Dd%2F%C3%A9%2B&user+name=-4", Err(0))
        );
        let fixed = Form {
            fields: vec![("a".into(), template("1 2"))],
        };
        assert_eq!(fixed.fixed().as_deref(), Some(&b"a=1+2"[..]));
    }

    #[test]
    fn multipart_is_laid_out_per_rfc_7578() {
        let bytes: Arc<[u8]> = Arc::from(&b"\x00\xff\r\n--x"[..]);
        let m = Multipart::new(
            vec![
                Part::Field {
                    name: "title".into(),
                    value: template("hi {{ who }}"),
                },
                Part::File {
                    name: "doc".into(),
                    filename: "a\"b.bin".into(),
                    content_type: "application/octet-stream".into(),
                    bytes,
                },
            ],
            &mut fastrand::Rng::with_seed(3),
        );
        assert!(m.fixed().is_none());
        assert_eq!(m.vars().collect::<Vec<_>>(), vec![0]);
        let (out, r) = render(|e, o| m.render(e, o), Some("ann"));
        assert_eq!(r, Ok(()));
        let b = &m.boundary;
        assert!(b.starts_with("belier-") && b.len() == 7 + BOUNDARY_RANDOM);
        let mut expected = format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhi ann\r\n\
             --{b}\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"a%22b.bin\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        expected.extend_from_slice(b"\x00\xff\r\n--x\r\n");
        expected.extend_from_slice(format!("--{b}--\r\n").as_bytes());
        assert_eq!(out, expected);
    }

    #[test]
    fn the_boundary_avoids_the_contents() {
        // Two generators with the same seed draw the same first candidate: put it in the file,
        // and the body must pick another.
        let first: String = {
            let mut rng = fastrand::Rng::with_seed(9);
            (0..BOUNDARY_RANDOM).map(|_| rng.alphanumeric()).collect()
        };
        let file = format!("before belier-{first} after");
        let m = Multipart::new(
            vec![Part::File {
                name: "f".into(),
                filename: "f".into(),
                content_type: "text/plain".into(),
                bytes: Arc::from(file.as_bytes()),
            }],
            &mut fastrand::Rng::with_seed(9),
        );
        assert_ne!(m.boundary, format!("belier-{first}"));
        let body = m.fixed().unwrap();
        let delimiter = format!("--{}", m.boundary);
        let count = body
            .windows(delimiter.len())
            .filter(|w| *w == delimiter.as_bytes())
            .count();
        assert_eq!(count, 2, "one opening delimiter and the closing one");
    }
}
