//! The Codex app-server `CodexErrorInfo` vocabularies conform knows, by product version. The
//! reference provider maps the pinned one (the version the decision records pin); the fake can
//! speak any of them (`--product-version`); `conform drift codex` compares a real binary's
//! generated schema against them.

/// One object variant: its single key and the fields of its payload with their schema types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectVariant {
    pub name: &'static str,
    /// `(field, type)` where type is the schema's format or type list, e.g. `uint16|null`, or
    /// the referenced definition's name.
    pub fields: &'static [(&'static str, &'static str)],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorInfoVocabulary {
    pub version: &'static str,
    pub strings: &'static [&'static str],
    pub objects: &'static [ObjectVariant],
}

impl ErrorInfoVocabulary {
    pub fn has_string(&self, s: &str) -> bool {
        self.strings.contains(&s)
    }

    pub fn object(&self, name: &str) -> Option<&ObjectVariant> {
        self.objects.iter().find(|o| o.name == name)
    }
}

const HTTP: &[(&str, &str)] = &[("httpStatusCode", "uint16|null")];

const OBJECTS: &[ObjectVariant] = &[
    ObjectVariant {
        name: "httpConnectionFailed",
        fields: HTTP,
    },
    ObjectVariant {
        name: "responseStreamConnectionFailed",
        fields: HTTP,
    },
    ObjectVariant {
        name: "responseStreamDisconnected",
        fields: HTTP,
    },
    ObjectVariant {
        name: "responseTooManyFailedAttempts",
        fields: HTTP,
    },
    ObjectVariant {
        name: "activeTurnNotSteerable",
        fields: &[("turnKind", "NonSteerableTurnKind")],
    },
];

/// `@openai/codex@0.147.0`: 11 strings, 5 objects (the decision records' vocabulary).
pub const V0_147_0: ErrorInfoVocabulary = ErrorInfoVocabulary {
    version: "0.147.0",
    strings: &[
        "contextWindowExceeded",
        "sessionBudgetExceeded",
        "usageLimitExceeded",
        "serverOverloaded",
        "cyberPolicy",
        "internalServerError",
        "unauthorized",
        "badRequest",
        "threadRollbackFailed",
        "sandboxError",
        "other",
    ],
    objects: OBJECTS,
};

/// `@openai/codex@0.169.0`: 18 strings (7 added), the same 5 objects.
pub const V0_169_0: ErrorInfoVocabulary = ErrorInfoVocabulary {
    version: "0.169.0",
    strings: &[
        "contextWindowExceeded",
        "sessionBudgetExceeded",
        "usageLimitExceeded",
        "rateLimitExceeded",
        "flexUnavailable",
        "serverOverloaded",
        "modelNotFound",
        "policyCapacityUnavailable",
        "inferenceHookDenied",
        "cyberPolicy",
        "misalignmentPolicyViolation",
        "tooManyDenials",
        "internalServerError",
        "unauthorized",
        "badRequest",
        "threadRollbackFailed",
        "sandboxError",
        "other",
    ],
    objects: OBJECTS,
};

/// The version the reference provider (and the decision records) are pinned to.
pub const PINNED: &ErrorInfoVocabulary = &V0_147_0;

/// Every vocabulary conform knows, oldest first.
pub const KNOWN: &[&ErrorInfoVocabulary] = &[&V0_147_0, &V0_169_0];

pub fn by_version(version: &str) -> Option<&'static ErrorInfoVocabulary> {
    KNOWN.iter().copied().find(|v| v.version == version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_vocabulary_has_sixteen_variants() {
        assert_eq!(PINNED.strings.len(), 11);
        assert_eq!(PINNED.objects.len(), 5);
        assert_eq!(by_version("0.169.0").map(|v| v.strings.len()), Some(18));
        assert!(by_version("0.1.0").is_none());
    }
}
