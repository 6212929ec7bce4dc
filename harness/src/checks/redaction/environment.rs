//! What the runtime is handed that is none of the model's business: the values of its
//! environment that look like secrets (the scenario's, and the variables the harness starts the
//! subject with).

use super::MIN_DERIVED_CHARS;
use crate::scenario::Scenario;

/// The values the scenario hands the runtime that look like secrets (a credential-shaped name,
/// a URL with a password, a credential-shaped value), and the harness's own parent token the
/// subject holds: none is ever the model's business. A URL's password counts alone too (a
/// provider may show the URL with it parsed out).
pub fn runtime_secrets(scenario: &Scenario) -> Vec<String> {
    let env = scenario.file.subject.env.iter();
    let parent = crate::proc::subject_process::PARENT_ENV
        .iter()
        .map(|(k, v)| (*k, *v));
    let mut out = Vec::new();
    let mut passwords = Vec::new();
    for (name, value) in env.map(|(k, v)| (k.as_str(), v.as_str())).chain(parent) {
        if let Some(password) = url_password(value) {
            passwords.push(password.to_owned());
            out.push(value.to_owned());
        } else if secret_name(name) || secret_value(value) {
            out.push(value.to_owned());
        }
    }
    out.retain(|s| s.chars().count() >= MIN_DERIVED_CHARS);
    // A password is short more often than a token, and no less a secret.
    out.extend(
        passwords
            .into_iter()
            .filter(|p| p.chars().count() >= MIN_PASSWORD_CHARS),
    );
    out
}

/// A URL's password shorter than this is not matched alone (the URL still is).
const MIN_PASSWORD_CHARS: usize = 6;

/// A variable name that says its value is a credential.
fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "API_KEY",
        "APIKEY",
        "PRIVATE_KEY",
        "AUTH",
        "COOKIE",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// A value shaped like a credential whatever its name.
fn secret_value(value: &str) -> bool {
    static SHAPE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(sk-|sk_|ghp_|gho_|github_pat_|xox[abp]-|AKIA|eyJ)[A-Za-z0-9_.\-]{8,}")
            .expect("a valid pattern")
    });
    SHAPE.is_match(value)
}

/// The password of a URL with credentials (`postgres://app:hunter2@db/x` → `hunter2`).
fn url_password(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let userinfo = rest.split(['/', '?', '#']).next()?.rsplit_once('@')?.0;
    userinfo
        .split_once(':')
        .map(|(_, p)| p)
        .filter(|p| !p.is_empty())
}
