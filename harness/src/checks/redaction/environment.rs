//! What the runtime may be handed that is none of the model's business: the values of its
//! environment that look like secrets, wherever they come from (the scenario, the variables the
//! harness starts the subject with, the harness's own environment the subject inherits), and
//! whatever the runtime echoes from it on stderr.

use super::MIN_DERIVED_CHARS;
use crate::proc::subject_process::PARENT_ENV;
use crate::scenario::Scenario;

/// The values handed to the runtime that are none of the model's business: those that look
/// like secrets (a credential-shaped name, a URL with a password, a credential-shaped value)
/// in the scenario's env, among the variables the harness starts the subject with (its parent
/// token) and in the harness's own environment, which the subject inherits (a CI's own
/// credentials); and whatever the runtime echoes on stderr. A URL's password counts alone too
/// (a provider may show the URL with it parsed out).
pub fn runtime_secrets(scenario: &Scenario) -> Vec<String> {
    // What the harness hands every subject is read once, not once a run.
    static HANDED: std::sync::LazyLock<Shaped> =
        std::sync::LazyLock::new(|| handed_to_every_subject(own_env()));
    secrets_of(scenario, &HANDED, own_env())
}

/// The harness's own environment, read once (a variable whose name or value is not UTF-8 is
/// left out: no text the subject writes can hold it as it is).
fn own_env() -> &'static [(String, String)] {
    static OWN: std::sync::LazyLock<Vec<(String, String)>> = std::sync::LazyLock::new(|| {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect()
    });
    &OWN
}

/// [`runtime_secrets`], the harness's own environment being `own` (a test's).
#[cfg(test)]
pub(super) fn handed_secrets(scenario: &Scenario, own: &[(String, String)]) -> Vec<String> {
    secrets_of(scenario, &handed_to_every_subject(own), own)
}

/// The secret-shaped values of the variables every subject is started with and of the
/// harness's own environment `own`, which it inherits.
fn handed_to_every_subject(own: &[(String, String)]) -> Shaped {
    let parent = PARENT_ENV.iter().copied();
    secret_shaped(parent.chain(own.iter().map(|(k, v)| (k.as_str(), v.as_str()))))
}

/// The scenario's env, then what every subject is handed (`handed`), each in the order
/// [`secret_shaped`] gives them; then what the runtime echoes.
fn secrets_of(scenario: &Scenario, handed: &Shaped, own: &[(String, String)]) -> Vec<String> {
    let env = scenario
        .file
        .subject
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()));
    let scenario_shaped = secret_shaped(env);
    let mut out = scenario_shaped.values;
    out.extend(handed.values.iter().cloned());
    out.extend(scenario_shaped.passwords);
    out.extend(handed.passwords.iter().cloned());
    out.extend(echoed(scenario, own));
    out
}

/// Secret-shaped values of some variables: the values, then the passwords of those that are
/// URLs (each list in the variables' order).
struct Shaped {
    values: Vec<String>,
    passwords: Vec<String>,
}

/// The values of `vars` that look like secrets, and the passwords of those that are URLs.
fn secret_shaped<'a>(vars: impl Iterator<Item = (&'a str, &'a str)>) -> Shaped {
    let mut out = Vec::new();
    let mut passwords = Vec::new();
    for (name, value) in vars {
        if let Some(password) = url_password(value) {
            passwords.push(password.to_owned());
            out.push(value.to_owned());
        } else if secret_name(name) || secret_value(value) {
            out.push(value.to_owned());
        }
    }
    out.retain(|s| s.chars().count() >= MIN_DERIVED_CHARS);
    // A password is short more often than a token, and no less a secret.
    passwords.retain(|p| p.chars().count() >= MIN_PASSWORD_CHARS);
    Shaped {
        values: out,
        passwords,
    }
}

/// What the runtime's `echo_to_stderr = "env:NAME"` steps write, whatever it looks like
/// (stderr is untrusted): NAME's value where the runtime may get it — the scenario's env,
/// else the variables the harness starts the subject with, else the harness's own
/// environment the subject inherits.
fn echoed(scenario: &Scenario, own: &[(String, String)]) -> Vec<String> {
    let parent = PARENT_ENV;
    let value = |name: &str| -> Option<String> {
        let from_parent = || parent.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let from_own = || own.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        scenario
            .file
            .subject
            .env
            .get(name)
            .map(String::as_str)
            .or_else(from_parent)
            .or_else(from_own)
            .map(str::to_owned)
    };
    scenario
        .script
        .steps()
        .iter()
        .filter_map(|step| {
            step.echo_to_stderr
                .as_deref()?
                .strip_prefix("env:")
                .and_then(value)
        })
        .filter(|v| v.chars().count() >= MIN_DERIVED_CHARS)
        .collect()
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
