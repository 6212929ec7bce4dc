//! Linked references: a reference from one definition of a bundle to another, compiled once
//! for all who refer to it. Each subschema was compiled with a copy of every definition it
//! reaches, so a definition used in many places (Codex's `ThreadItem`, ACP's `ContentBlock`) was
//! compiled into every validator that reached it: most of the memory the harness's wire checks
//! held. A linked reference is a keyword of ours ([`KEYWORD`]) whose validator is the
//! definition's own, asked for from the protocol's cache ([`Linker`]) the first time it is
//! needed; its errors are the definition's, at the place they have in the whole value.
//! A union's branches stay references: jsonschema reads them to pick the branch an object can
//! match (its discriminator), and would otherwise judge every branch.

use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Keyword, ValidationError, ValidationOptions, Validator};
use serde_json::Value;

/// The keyword a linked reference is written as (in place of `$ref`, with the same pointer).
pub(crate) const KEYWORD: &str = "x-conform-linked";

/// Marks an error carried out of a linked definition: `MARK <path inside> MARK <message>`. A
/// control character never appears raw in a message (JSON escapes it in the value shown).
const MARK: char = '\u{1}';

/// A protocol's compiled subschemas, for the references linked to them.
pub(crate) trait Linker: Sync {
    /// The validator of the subschema at `pointer` (`#/definitions/Foo`), compiled once.
    fn linked(&'static self, pointer: &str) -> Result<Arc<Validator>, String>;
}

/// Compiles `doc` (a bundle's closure with its references linked) with `options`, its linked
/// references resolved through `linker`.
pub(crate) fn build(
    options: ValidationOptions<'_>,
    doc: &Value,
    linker: &'static dyn Linker,
) -> Result<Validator, ValidationError<'static>> {
    options
        .with_keyword(KEYWORD, move |_, pointer, _| {
            let pointer = pointer
                .as_str()
                .ok_or_else(|| ValidationError::custom("a linked reference names a pointer"))?;
            Ok(Box::new(Linked {
                pointer: pointer.to_owned(),
                linker,
                target: OnceLock::new(),
            }))
        })
        .build(doc)
}

/// One linked reference. Its target is looked up when first used, not when the referring
/// subschema is compiled: a definition may refer to itself.
struct Linked {
    pointer: String,
    linker: &'static dyn Linker,
    target: OnceLock<Result<Arc<Validator>, String>>,
}

impl Linked {
    fn target(&self) -> Result<&Validator, &str> {
        match self
            .target
            .get_or_init(|| self.linker.linked(&self.pointer))
        {
            Ok(v) => Ok(v),
            Err(why) => Err(why),
        }
    }
}

impl<'i> Keyword<'i> for Linked {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.iter_errors(instance).next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.target().is_ok_and(|v| v.is_valid(instance))
    }

    fn iter_errors(
        &self,
        instance: &'i Value,
    ) -> Box<dyn Iterator<Item = ValidationError<'i>> + 'i> {
        let errors: Vec<ValidationError<'static>> = match self.target() {
            Ok(v) => v
                .iter_errors(instance)
                .map(|e| {
                    let (at, what) = where_and_what(&e);
                    ValidationError::custom(format!("{MARK}{at}{MARK}{what}"))
                })
                .collect(),
            Err(why) => vec![ValidationError::custom(format!(
                "{} cannot be checked: {why}",
                self.pointer
            ))],
        };
        Box::new(errors.into_iter())
    }
}

/// Where in the checked value an error is (its instance path) and what it says: for one carried
/// out of a linked definition, the path to the reference and on inside the definition, and the
/// definition's own message — what the error would have said had the definition been compiled
/// in place.
pub(crate) fn where_and_what(e: &ValidationError<'_>) -> (String, String) {
    let at = e.instance_path().to_string();
    if let ValidationErrorKind::Custom { message, .. } = e.kind()
        && let Some(carried) = message.strip_prefix(MARK)
        && let Some((inside, what)) = carried.split_once(MARK)
    {
        return (format!("{at}{inside}"), what.to_owned());
    }
    (at, e.to_string())
}
