//! Fresh ids and RFC 3339 timestamps, as the host writes them, and bytes read as text.

use std::borrow::Cow;

/// `bytes` as text, invalid sequences replaced by U+FFFD — `String::from_utf8_lossy`, with
/// valid text (nearly every line) checked by `str::from_utf8`'s word-at-a-time pass first:
/// the lossy decoder walks a line byte by byte, some 7 % of the reference's CPU over the
/// catalog (its 16 MiB frames).
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

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
    fn decoding_is_lossy_only_where_the_bytes_are_not_utf8() {
        assert!(matches!(decode("héllo".as_bytes()), Cow::Borrowed("héllo")));
        let cut = &"é".as_bytes()[..1];
        assert_eq!(decode(&[b"a", cut, b"b"].concat()), "a\u{fffd}b");
        assert_eq!(decode(b""), "");
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
