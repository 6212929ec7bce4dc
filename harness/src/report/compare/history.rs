//! A small history for the page (`conform report html --compare OLD.json … NEW.json`): one row
//! per report, oldest first — when it was written and how its runs ended.

use std::path::Path;

use serde_json::{Value, json};

use super::{Judged, Malformed, Previous};

/// The rows of the previous reports (oldest first) and of the current one, named `name`.
pub fn of(previous: &[Previous], name: &str, current: &Value) -> Result<Value, Malformed> {
    let mut rows = previous
        .iter()
        .map(|p| row(&p.file, &p.report))
        .collect::<Result<Vec<_>, _>>()?;
    rows.push(row(Path::new(name), current)?);
    Ok(Value::Array(rows))
}

/// One report's row: its file, when it was written, its counts.
pub fn row(file: &Path, report: &Value) -> Result<Value, Malformed> {
    let judged = Judged::of(report)?;
    Ok(json!({
        "file": file,
        "generatedAt": judged.generated_at,
        "subject": judged.subject,
        "counts": judged.counts().to_json(),
    }))
}
