//! Prometheus' HTTP query API, for capacity SLOs on the server's own metrics (`--slo
//! 'prom:QUERY<0.8'`): one instant query evaluated at a step's end.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// How long a query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The value of `query` at `at` on the Prometheus server at `base` (`http://host:9090`): a
/// scalar, or the largest value of an instant vector; `None` when it has no data then.
pub fn query(base: &str, query: &str, at: SystemTime) -> Result<Option<f64>, String> {
    let time = at
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs_f64();
    let url = format!("{}/api/v1/query", base.trim_end_matches('/'));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(QUERY_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .get(&url)
        .query("query", query)
        .query("time", format!("{time:.3}"))
        .call()
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("{url}: HTTP {status}: {e}"))?;
    let body: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{url}: HTTP {status}, not Prometheus' JSON: {e}"))?;
    value(&body).map_err(|why| format!("{url}: {why}"))
}

/// The value in a query API answer.
fn value(body: &Value) -> Result<Option<f64>, String> {
    if body["status"] != "success" {
        return Err(format!(
            "{}: {}",
            body["errorType"].as_str().unwrap_or("error"),
            body["error"].as_str().unwrap_or("no message")
        ));
    }
    let number = |v: &Value| -> Option<f64> { v.get(1)?.as_str()?.parse().ok() };
    let data = &body["data"];
    Ok(match data["resultType"].as_str() {
        Some("scalar") => number(&data["result"]),
        Some("vector") => data["result"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| number(&s["value"]))
            .reduce(f64::max),
        other => {
            return Err(format!(
                "a {other:?} result: use an instant vector or a scalar"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_prometheus_writes_them() {
        let vector: Value = serde_json::from_str(
            r#"{"status":"success","data":{"resultType":"vector","result":[
                {"metric":{"job":"a"},"value":[1700000000.5,"0.25"]},
                {"metric":{"job":"b"},"value":[1700000000.5,"0.75"]}]}}"#,
        )
        .unwrap();
        assert_eq!(value(&vector), Ok(Some(0.75)));
        let empty: Value = serde_json::from_str(
            r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#,
        )
        .unwrap();
        assert_eq!(value(&empty), Ok(None));
        let scalar: Value = serde_json::from_str(
            r#"{"status":"success","data":{"resultType":"scalar","result":[1,"3"]}}"#,
        )
        .unwrap();
        assert_eq!(value(&scalar), Ok(Some(3.0)));
        let error: Value = serde_json::from_str(
            r#"{"status":"error","errorType":"bad_data","error":"parse error at char 5"}"#,
        )
        .unwrap();
        assert!(value(&error).unwrap_err().contains("parse error at char 5"));
    }
}
