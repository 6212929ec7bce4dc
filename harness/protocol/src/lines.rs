//! Newline-delimited input read as bytes, with a bound on line length. Every seam of conform
//! reads lines from a process it does not trust (the subject's stdout and stderr, the
//! provider's frames into a fake, the fakes' side channel): a line is never assumed to be
//! UTF-8 and is never buffered past the limit, so one runaway line costs its head, not its size.

use std::collections::VecDeque;
use std::fmt::Write as _;

/// Bytes of an over-long line kept to show what it was.
pub const HEAD_BYTES: usize = 256;

/// One line of input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// A line within the limit, without its `\n` (nor a `\r` before it).
    Line(Vec<u8>),
    /// A line over the limit: its first [`HEAD_BYTES`] bytes and its whole size.
    TooLong { head: Vec<u8>, size: usize },
}

/// Splits a byte stream into [`Piece`]s, holding at most `max` bytes of a line.
#[derive(Debug)]
pub struct LineSplitter {
    max: usize,
    buf: Vec<u8>,
    /// The line being skipped because it passed the limit: its head and size so far.
    skipping: Option<(Vec<u8>, usize)>,
    ready: VecDeque<Piece>,
}

impl LineSplitter {
    pub fn new(max: usize) -> LineSplitter {
        LineSplitter {
            max,
            buf: Vec::new(),
            skipping: None,
            ready: VecDeque::new(),
        }
    }

    /// Feeds bytes; complete lines become available through [`LineSplitter::pop`].
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (segment, ended) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], true),
                None => (bytes, false),
            };
            bytes = &bytes[segment.len() + usize::from(ended)..];
            if let Some((_, size)) = &mut self.skipping {
                *size += segment.len();
            } else if self.buf.len() + segment.len() > self.max {
                let mut head = std::mem::take(&mut self.buf);
                let size = head.len() + segment.len();
                let room = HEAD_BYTES.saturating_sub(head.len());
                head.extend_from_slice(&segment[..room.min(segment.len())]);
                head.truncate(HEAD_BYTES);
                self.skipping = Some((head, size));
            } else {
                self.buf.extend_from_slice(segment);
            }
            if ended {
                self.end_line();
            }
        }
    }

    /// The input ended: an unterminated last line counts as a line.
    pub fn finish(&mut self) {
        if self.skipping.is_some() || !self.buf.is_empty() {
            self.end_line();
        }
    }

    pub fn pop(&mut self) -> Option<Piece> {
        self.ready.pop_front()
    }

    fn end_line(&mut self) {
        let piece = match self.skipping.take() {
            Some((head, size)) => Piece::TooLong { head, size },
            None => {
                let mut line = std::mem::take(&mut self.buf);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Piece::Line(line)
            }
        };
        self.ready.push_back(piece);
    }
}

/// Bytes for a human: valid UTF-8 as text with control characters escaped
/// ([`escape_controls`]), every invalid byte as `\xNN`, cut after `keep` bytes with the total
/// size said.
pub fn show_bytes(bytes: &[u8], keep: usize) -> String {
    let cut = &bytes[..bytes.len().min(keep)];
    let mut out = String::new();
    for chunk in cut.utf8_chunks() {
        out.push_str(&escape_controls(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    if bytes.len() > cut.len() {
        out.push_str(&format!("… ({} bytes in all)", bytes.len()));
    }
    out
}

/// `text` with every control character except `\n` and `\t` made visible, so that what a
/// subject says cannot drive the terminal that shows it: no colours, cursor moves, screen
/// clears, OSC 8 hyperlinks or window titles, no NUL, no carriage return overwriting a line.
///
/// C0 controls and DEL become `\xNN` (ESC is `\x1b`, NUL `\x00`, BEL `\x07`), except CR,
/// which becomes `\r`; C1 controls (U+0080–U+009F, which some terminals also obey) become
/// `\u{NN}`. Backslashes are kept as they are, so a literal `\x1b` in the text reads the same
/// as an escaped ESC: the escaping is for safety, not for a lossless round trip (the JSON and
/// JUnit reports stay exact).
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// A text cut to at most `keep` bytes (on a character boundary), saying how long it was.
pub fn excerpt(text: &str, keep: usize) -> String {
    if text.len() <= keep {
        return text.to_owned();
    }
    let mut end = keep;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> Vec<Piece> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c);
            while let Some(p) = s.pop() {
                out.push(p);
            }
        }
        s.finish();
        while let Some(p) = s.pop() {
            out.push(p);
        }
        out
    }

    #[test]
    fn lines_split_across_chunks_and_crlf() {
        assert_eq!(
            split(100, &[b"ab", b"c\r\nde", b"\n", b"tail"]),
            vec![
                Piece::Line(b"abc".to_vec()),
                Piece::Line(b"de".to_vec()),
                Piece::Line(b"tail".to_vec()),
            ]
        );
    }

    #[test]
    fn a_line_over_the_limit_keeps_only_its_head_and_size() {
        let long = vec![b'x'; 10_000];
        let pieces = split(1000, &[&long[..3000], &long[3000..], b"\nnext\n"]);
        assert_eq!(pieces.len(), 2);
        match &pieces[0] {
            Piece::TooLong { head, size } => {
                assert_eq!(*size, 10_000);
                assert_eq!(head.len(), HEAD_BYTES);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(pieces[1], Piece::Line(b"next".to_vec()));
    }

    #[test]
    fn an_unterminated_flood_is_one_too_long_piece_at_the_end() {
        let mut s = LineSplitter::new(64);
        for _ in 0..1000 {
            s.push(&[b'y'; 4096]);
            assert!(s.pop().is_none());
        }
        assert!(
            s.buf.capacity() <= 64 + 4096,
            "nothing past the limit is held"
        );
        s.finish();
        assert_eq!(
            s.pop(),
            Some(Piece::TooLong {
                head: vec![b'y'; HEAD_BYTES],
                size: 4_096_000
            })
        );
    }

    #[test]
    fn bytes_are_shown_escaped() {
        assert_eq!(
            show_bytes(b"ok \xff\xfe caf\xc3\xa9", 100),
            "ok \\xff\\xfe café"
        );
        assert_eq!(show_bytes(b"\x1b[31mred\x00", 100), "\\x1b[31mred\\x00");
        assert_eq!(show_bytes(b"abcdef", 3), "abc… (6 bytes in all)");
    }

    #[test]
    fn excerpts_cut_on_char_boundaries() {
        assert_eq!(excerpt("héllo", 2), "h… (6 bytes in all)");
        assert_eq!(excerpt("short", 10), "short");
    }
}
