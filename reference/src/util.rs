//! Fresh ids and RFC 3339 timestamps, as the host writes them.

/// A fresh random UUID (v4), like `crypto.randomUUID()`.
pub fn fresh_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// 32 fresh random hex digits (a v4 UUID without dashes, like `randomUUID().replaceAll('-', '')`).
pub fn fresh_hex32() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-29T18:20:00.123Z`), like
/// `new Date().toISOString()`.
pub fn rfc3339_now() -> String {
    rfc3339(jiff::Timestamp::now())
}

fn rfc3339(t: jiff::Timestamp) -> String {
    format!("{t:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        let at =
            |s: i64, ms: i32| rfc3339(jiff::Timestamp::new(s, ms * 1_000_000).expect("in range"));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_795_976_400, 123), "2026-11-29T18:20:00.123Z");
    }

    #[test]
    fn uuids_are_fresh() {
        let a = fresh_uuid();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert_ne!(a, fresh_uuid());
        let h = fresh_hex32();
        assert_eq!(h.len(), 32);
        assert!(h.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
