//! One HTTP request per delivery (ureq, blocking: each output has its own thread), with the
//! answer sorted into retry or refusal as Prometheus' remote-write client sorts it.

use std::time::Duration;

use crate::queue::Failure;
use crate::spec::Credential;

/// How long one delivery may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(2);

/// An HTTP client for one endpoint.
pub struct Http {
    agent: ureq::Agent,
    authorization: Option<String>,
}

impl Http {
    /// A client sending `credential`, if any, as its `Authorization`.
    pub fn new(credential: Option<&Credential>) -> Http {
        use base64::Engine as _;
        let authorization = credential.map(|c| match c {
            Credential::Basic { user, password } => format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            ),
            Credential::Token(token) => format!("Token {token}"),
        });
        Http {
            agent: ureq::Agent::config_builder()
                .timeout_global(Some(TIMEOUT))
                .http_status_as_error(false)
                .build()
                .into(),
            authorization,
        }
    }

    /// Sends `body` with `method` (`POST` or `PUT`) and `headers`: a 2xx is delivered, a
    /// 429 or 5xx or a transport error is worth a retry, another status is a refusal.
    pub fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(), Failure> {
        let request = match method {
            "PUT" => self.agent.put(url),
            _ => self.agent.post(url),
        };
        let mut request = headers
            .iter()
            .fold(request, |r, (name, value)| r.header(*name, *value));
        if let Some(a) = &self.authorization {
            request = request.header("Authorization", a);
        }
        let mut response = request
            .send(body)
            .map_err(|e| Failure::Retry(e.to_string()))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(());
        }
        let text = response
            .body_mut()
            .with_config()
            .limit(512)
            .read_to_string()
            .unwrap_or_default();
        let message = format!("HTTP {status}: {}", text.trim());
        if status == 429 || status >= 500 {
            Err(Failure::Retry(message))
        } else {
            Err(Failure::Refused(message))
        }
    }
}
