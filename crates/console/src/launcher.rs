//! Runs started from the page: the form as the user filled it, and the owner's [`Launcher`]
//! that validates and starts it.

use serde::Deserialize;

/// A run as the page's form describes it: every value as the user typed it, so that whoever
/// launches it validates it as it validates the same flag. Empty fields are not given.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Form {
    /// A plan file of the working directory (one of [`Launcher::plans`]); the request and
    /// load fields then override the plan's as `belier run`'s flags do.
    pub plan: String,
    /// The URL (flag runs).
    pub url: String,
    /// The method (`--method`).
    pub method: String,
    /// Headers, one `Name: value` a line (`--header`).
    pub headers: String,
    /// The body (`--body`).
    pub body: String,
    /// `closed` (connections) or `open` (a rate).
    pub model: String,
    /// Connections of a closed loop (`--connections`), or a plan's virtual users (`--vus`).
    pub connections: String,
    /// Arrivals per second of an open loop (`--rate`).
    pub rate: String,
    /// Stages (`--stages`).
    pub stages: String,
    /// Run length (`--duration`).
    pub duration: String,
    /// Run name (`--name`).
    pub name: String,
}

/// Starts runs for a console without one (`belier web`).
pub trait Launcher: Send + Sync {
    /// Validates `form` and starts its run, which then reports to the console's [`Hub`](crate::hub::Hub); or
    /// says what is wrong with the form, naming the field's flag.
    fn launch(&self, form: Form) -> Result<(), String>;
    /// The plan files the form may offer.
    fn plans(&self) -> Vec<String>;
}
