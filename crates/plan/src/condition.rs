//! `if:` conditions: a small expression language on a user's variables, the last response's
//! status, whether the last request step failed, and the latest result of a named check.
//!
//! ```text
//! or      := and ( "||" and )*
//! and     := unary ( "&&" unary )*
//! unary   := "!" unary | compare
//! compare := atom ( ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) atom )?
//! atom    := "(" or ")" | 'text' | "text" | number | true | false
//!          | status | failed | check("NAME") | VARIABLE
//! ```
//!
//! Values are text, numbers or booleans. `==` and `!=` compare as numbers when both sides
//! read as numbers, else as text (a boolean against anything compares truthiness); `<`, `>`
//! and the like compare numbers, else text. Truthy: `true`, a non-zero number, non-empty text
//! (a variable without a value is empty). Compiled when the plan loads; evaluation allocates
//! nothing.

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A compiled condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A text literal.
    Text(String),
    /// A number literal.
    Number(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A variable slot.
    Var(usize),
    /// The last response's status (0 before any, or when the last request got none).
    Status,
    /// Whether the last request step failed.
    Failed,
    /// The latest result of a check row (false before it ran).
    Check(usize),
    /// `not`.
    Not(Box<Expr>),
    /// `and`.
    And(Box<Expr>, Box<Expr>),
    /// `or`.
    Or(Box<Expr>, Box<Expr>),
    /// A comparison.
    Compare(Box<Expr>, Cmp, Box<Expr>),
}

/// A name the parser asks the plan about.
pub(crate) enum Name<'a> {
    Variable(&'a str),
    Check(&'a str),
}

/// What a condition reads when it is evaluated.
pub struct Facts<'a> {
    /// The user's variables, by slot.
    pub vars: &'a [Option<String>],
    /// The last response's status (0: none).
    pub status: u16,
    /// Whether the last request step failed.
    pub failed: bool,
    /// The latest result of each check row.
    pub checks: &'a [bool],
}

#[derive(Clone, Copy, Debug)]
enum Value<'a> {
    Text(&'a str),
    Number(f64),
    Bool(bool),
}

impl Value<'_> {
    fn truthy(self) -> bool {
        match self {
            Value::Text(t) => !t.is_empty(),
            Value::Number(n) => n != 0.0,
            Value::Bool(b) => b,
        }
    }

    fn number(self) -> Option<f64> {
        match self {
            Value::Text(t) => t.trim().parse().ok(),
            Value::Number(n) => Some(n),
            Value::Bool(_) => None,
        }
    }
}

impl Expr {
    /// Whether the condition holds.
    pub fn holds(&self, facts: &Facts<'_>) -> bool {
        self.value(facts).truthy()
    }

    fn value<'a>(&'a self, f: &Facts<'a>) -> Value<'a> {
        match self {
            Expr::Text(t) => Value::Text(t),
            Expr::Number(n) => Value::Number(*n),
            Expr::Bool(b) => Value::Bool(*b),
            Expr::Var(slot) => {
                Value::Text(f.vars.get(*slot).and_then(|v| v.as_deref()).unwrap_or(""))
            }
            Expr::Status => Value::Number(f64::from(f.status)),
            Expr::Failed => Value::Bool(f.failed),
            Expr::Check(i) => Value::Bool(f.checks.get(*i).copied().unwrap_or(false)),
            Expr::Not(e) => Value::Bool(!e.holds(f)),
            Expr::And(a, b) => Value::Bool(a.holds(f) && b.holds(f)),
            Expr::Or(a, b) => Value::Bool(a.holds(f) || b.holds(f)),
            Expr::Compare(a, op, b) => Value::Bool(compare(a.value(f), *op, b.value(f))),
        }
    }
}

fn compare(a: Value<'_>, op: Cmp, b: Value<'_>) -> bool {
    use std::cmp::Ordering;
    let order = match (a, b) {
        (Value::Bool(_), _) | (_, Value::Bool(_)) => a.truthy().cmp(&b.truthy()),
        _ => match (a.number(), b.number()) {
            (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Less),
            _ => text(a).cmp(&text(b)),
        },
    };
    match op {
        Cmp::Eq => order.is_eq(),
        Cmp::Ne => order.is_ne(),
        Cmp::Lt => order.is_lt(),
        Cmp::Le => order.is_le(),
        Cmp::Gt => order.is_gt(),
        Cmp::Ge => order.is_ge(),
    }
}

fn text(v: Value<'_>) -> std::borrow::Cow<'_, str> {
    match v {
        Value::Text(t) => t.into(),
        Value::Number(n) => n.to_string().into(),
        Value::Bool(b) => b.to_string().into(),
    }
}

/// A parse error: byte offset in the text, and the message.
pub(crate) type Error = (usize, String);

/// Parses `text`; `resolve` turns variable and check names into expressions (or says why
/// not).
pub(crate) fn parse(
    text: &str,
    resolve: &mut dyn FnMut(Name<'_>) -> Result<Expr, String>,
) -> Result<Expr, Error> {
    let mut p = Parser {
        text,
        at: 0,
        resolve,
    };
    let e = p.or()?;
    p.space();
    if p.at < text.len() {
        return Err((p.at, format!("unexpected `{}`", &text[p.at..])));
    }
    Ok(e)
}

struct Parser<'t, 'r> {
    text: &'t str,
    at: usize,
    resolve: &'r mut dyn FnMut(Name<'_>) -> Result<Expr, String>,
}

impl<'t> Parser<'t, '_> {
    fn space(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.space();
        if self.text[self.at..].starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, Error> {
        let mut e = self.and()?;
        while self.eat("||") {
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, Error> {
        let mut e = self.unary()?;
        while self.eat("&&") {
            e = Expr::And(Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, Error> {
        self.space();
        if self.text[self.at..].starts_with('!') && !self.text[self.at..].starts_with("!=") {
            self.at += 1;
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        let left = self.atom()?;
        const OPS: [(&str, Cmp); 6] = [
            ("==", Cmp::Eq),
            ("!=", Cmp::Ne),
            ("<=", Cmp::Le),
            (">=", Cmp::Ge),
            ("<", Cmp::Lt),
            (">", Cmp::Gt),
        ];
        for (token, op) in OPS {
            if self.eat(token) {
                let right = self.atom()?;
                return Ok(Expr::Compare(Box::new(left), op, Box::new(right)));
            }
        }
        Ok(left)
    }

    fn atom(&mut self) -> Result<Expr, Error> {
        self.space();
        let start = self.at;
        let rest = &self.text[start..];
        let Some(first) = rest.chars().next() else {
            return Err((
                start,
                "expected a value, a variable, `status`, `failed`, `check(\"NAME\")` or `(`".into(),
            ));
        };
        if first == '(' {
            self.at += 1;
            let e = self.or()?;
            if !self.eat(")") {
                return Err((self.at, "expected `)`".into()));
            }
            return Ok(e);
        }
        if first == '"' || first == '\'' {
            return Ok(Expr::Text(self.quoted(first)?.to_string()));
        }
        if first.is_ascii_digit()
            || (first == '-' && rest[1..].starts_with(|c: char| c.is_ascii_digit()))
        {
            let len = 1 + rest[1..]
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len() - 1);
            self.at += len;
            return rest[..len]
                .parse()
                .map(Expr::Number)
                .map_err(|_| (start, format!("`{}` is not a number", &rest[..len])));
        }
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        if len == 0 {
            return Err((start, format!("unexpected `{first}`")));
        }
        let name = &rest[..len];
        self.at += len;
        let resolved = match name {
            "true" => return Ok(Expr::Bool(true)),
            "false" => return Ok(Expr::Bool(false)),
            "status" => return Ok(Expr::Status),
            "failed" => return Ok(Expr::Failed),
            "check" => {
                if !self.eat("(") {
                    return Err((
                        self.at,
                        "expected `(` after `check`: check(\"STEP: LABEL\")".into(),
                    ));
                }
                self.space();
                let quote_at = self.at;
                let quote = self.text[self.at..].chars().next().unwrap_or(' ');
                if quote != '"' && quote != '\'' {
                    return Err((quote_at, "expected a quoted check name".into()));
                }
                let check = self.quoted(quote)?;
                if !self.eat(")") {
                    return Err((self.at, "expected `)`".into()));
                }
                (self.resolve)(Name::Check(check)).map_err(|m| (quote_at, m))
            }
            _ => (self.resolve)(Name::Variable(name)).map_err(|m| (start, m)),
        };
        resolved
    }

    /// The text of a quoted string starting at the current position (no escapes).
    fn quoted(&mut self, quote: char) -> Result<&'t str, Error> {
        let start = self.at;
        let body = &self.text[start + 1..];
        let Some(end) = body.find(quote) else {
            return Err((start, format!("unclosed {quote}")));
        };
        self.at = start + 1 + end + 1;
        Ok(&body[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str) -> Result<Expr, Error> {
        parse(text, &mut |n| match n {
            Name::Variable("role") => Ok(Expr::Var(0)),
            Name::Variable("count") => Ok(Expr::Var(1)),
            Name::Variable(v) => Err(format!("undefined variable `{v}`")),
            Name::Check("login: status in [200]") => Ok(Expr::Check(0)),
            Name::Check(c) => Err(format!("no check `{c}`")),
        })
    }

    fn holds(text: &str, status: u16, failed: bool) -> bool {
        let vars = [Some("admin".to_string()), Some("12".to_string())];
        let facts = Facts {
            vars: &vars,
            status,
            failed,
            checks: &[true],
        };
        compile(text).unwrap().holds(&facts)
    }

    #[test]
    fn operators_and_precedence() {
        assert!(holds("status == 200", 200, false));
        assert!(!holds("status != 200", 200, false));
        assert!(holds("status >= 400 || failed", 200, true));
        assert!(!holds("status >= 400 || failed", 200, false));
        assert!(holds("role == 'admin' && count > 9", 200, false));
        // Numbers compare as numbers, not text ("12" < "9" as text).
        assert!(!holds("count < 9", 200, false));
        assert!(holds("count == 12.0", 200, false));
        assert!(holds("!(role == \"user\")", 200, false));
        assert!(holds(
            "!failed && check(\"login: status in [200]\")",
            200,
            false
        ));
        // && binds tighter than ||.
        assert!(holds("true || false && false", 0, false));
        assert!(!holds("(true || false) && false", 0, false));
        assert!(holds("role", 0, false));
        assert!(holds("-1 < 0", 0, false));
        assert!(holds("role > 'a'", 0, false));
        assert!(holds("failed == true", 0, true));
    }

    #[test]
    fn an_unset_variable_is_empty_and_false() {
        let vars = [None, None];
        let facts = Facts {
            vars: &vars,
            status: 0,
            failed: false,
            checks: &[],
        };
        assert!(!compile("role").unwrap().holds(&facts));
        assert!(compile("role == ''").unwrap().holds(&facts));
        // A check that never ran has not passed.
        assert!(!compile("check('login: status in [200]')")
            .unwrap()
            .holds(&facts));
    }

    #[test]
    fn errors_name_the_offset() {
        assert_eq!(compile("status == ").unwrap_err().0, 10);
        assert_eq!(
            compile("rol == 1").unwrap_err(),
            (0, "undefined variable `rol`".into())
        );
        assert_eq!(compile("status == 200 )").unwrap_err().0, 14);
        assert_eq!(compile("(status == 200").unwrap_err().1, "expected `)`");
        assert_eq!(compile("role == 'x").unwrap_err(), (8, "unclosed '".into()));
        assert_eq!(
            compile("check('nope')").unwrap_err(),
            (6, "no check `nope`".into())
        );
        assert!(compile("status = 1").is_err());
        assert!(compile("&& status").is_err());
        assert!(compile("").is_err());
    }
}
