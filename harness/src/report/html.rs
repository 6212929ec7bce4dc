//! The HTML report: one self-contained page (`index.html`: no server, no network, its script
//! and style inside it) made from the JSON report — a run's, or shards' merged. The report's
//! data rides in the page as JSON that cannot close its `<script>` element, and the page's
//! script builds every element with `textContent`: nothing a subject wrote is ever parsed as
//! markup. The page carries only what it draws ([`shown`]).

use serde_json::Value;

mod shown;

const STYLE: &str = include_str!("html/style.css");
const SCRIPT: &str = include_str!("html/app.js");

/// The page for a JSON report ([`super::json`], or a merged one).
pub fn page(report: &Value) -> String {
    let title = format!(
        "conform — {}",
        title_part(report["subject"].as_str().unwrap_or("a subject"))
    );
    let script = format!("\n{SCRIPT}");
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src '{}'\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <noscript>This report is drawn by its script; the same data is in the JSON report.</noscript>\n\
         <script id=\"report-data\" type=\"application/json\">{}</script>\n\
         <script>{script}</script>\n</body>\n</html>\n",
        script_hash(&script),
        text(&title),
        inert_json(&shown::shown(report))
    )
}

/// A subject's name as a window's title holds it: its first line, cut at 200 characters.
fn title_part(subject: &str) -> String {
    let line = subject.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// The page's own script as the Content-Security-Policy names it: the one script that may run
/// (`sha256-…` of its exact text), whatever else a page could be made to hold.
fn script_hash(script: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(script.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Text for an HTML text node.
fn text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// JSON that can sit inside a `<script>` element: no `<`, `>` or `&` (escaped inside strings,
/// where alone they can appear), nor the line separators some parsers end a line at.
fn inert_json(v: &Value) -> String {
    serde_json::to_string(v)
        .expect("serialises")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Writes the page as `index.html` in `dir` (made if missing).
pub fn write(dir: &std::path::Path, report: &Value) -> std::io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("index.html");
    std::fs::write(&path, page(report))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subjects_markup_never_leaves_its_json_string() {
        let hostile = "</script><script>document.title='PWNED'</script><!--\u{2028}";
        let report = json!({"subject": hostile, "cases": [{"id": "x", "verdict": "fail",
            "findings": [{"check": "c", "message": hostile}]}]});
        let page = page(&report);
        // The data element closes once, where the page closes it.
        let data = page
            .split("<script id=\"report-data\" type=\"application/json\">")
            .nth(1)
            .unwrap();
        let (json_text, _) = data.split_once("</script>").unwrap();
        assert!(!json_text.contains('<') && !json_text.contains('>'));
        let back: Value = serde_json::from_str(json_text).unwrap();
        assert_eq!(back, shown::shown(&report));
        assert_eq!(back["cases"][0]["findings"][0]["message"], hostile);
        // The title is text.
        assert!(page.contains("<title>conform — &lt;/script&gt;&lt;script&gt;"));
    }
}
