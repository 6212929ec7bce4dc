//! Bounds on what one run puts in a report. A failing run's messages, diffs and ledgers grow
//! with what the run did — a scenario of thousands of steps, a subject that floods — and one run
//! must not make a report of tens of megabytes. Each part is cut in the middle (its start and
//! its end are what explain a failure) with a visible `… N bytes cut …` marker.

/// One finding's message (a diff, an excerpt of output).
pub const MESSAGE_BYTES: usize = 8 * 1024;

/// The runtime ledger of one run.
pub const LEDGER_LINES: usize = 400;
pub const LEDGER_BYTES: usize = 128 * 1024;

/// The whole block a failing run gets in the text report (and as `detail` in JSON).
pub const DETAIL_BYTES: usize = 256 * 1024;

/// `text` if it is at most `max` bytes; else its head and tail around a marker saying how many
/// bytes were cut (cut on character boundaries).
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let head = floor_boundary(text, max * 3 / 4);
    let tail = ceil_boundary(text, text.len() - (max - head));
    format!(
        "{}\n… {} bytes cut …\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The first and last of `lines`, at most `max_lines` of them and `max_bytes` in all, around a
/// marker line saying how many lines and bytes were cut.
pub fn cut_lines(lines: &[String], max_lines: usize, max_bytes: usize) -> Vec<String> {
    let total: usize = lines.iter().map(String::len).sum();
    if lines.len() <= max_lines && total <= max_bytes {
        return lines.to_vec();
    }
    if lines.len() <= max_lines {
        // Few lines, some long: each gets its share of the bytes.
        let per_line = (max_bytes / lines.len().max(1)).max(1);
        return lines.iter().map(|l| cut(l, per_line)).collect();
    }
    let per_line = (max_bytes / max_lines.max(1)).max(1);
    let keep_head = max_lines * 3 / 4;
    let keep_tail = max_lines - keep_head;
    let shown = |l: &String| cut(l, per_line);
    let mut out: Vec<String> = lines.iter().take(keep_head).map(shown).collect();
    let tail_from = lines.len().saturating_sub(keep_tail).max(keep_head);
    let cut_lines = &lines[keep_head.min(lines.len())..tail_from];
    let kept: usize = out.iter().map(String::len).sum::<usize>()
        + lines[tail_from..]
            .iter()
            .map(|l| shown(l).len())
            .sum::<usize>();
    out.push(format!(
        "… {} line(s), {} bytes cut …",
        cut_lines.len(),
        total.saturating_sub(kept)
    ));
    out.extend(lines[tail_from..].iter().map(shown));
    out
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_keeps_its_ends_and_says_what_was_cut() {
        let text = format!("start{}end", "é".repeat(10_000));
        let shown = cut(&text, 1000);
        assert!(shown.len() < 1100, "{}", shown.len());
        assert!(shown.starts_with("start") && shown.ends_with("end"));
        let marker = shown.lines().find(|l| l.contains("bytes cut")).unwrap();
        let n: usize = marker.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert_eq!(n + shown.len() - marker.len() - 2, text.len());
        assert_eq!(cut("short", 1000), "short");
    }

    #[test]
    fn many_lines_keep_their_ends_within_the_bounds() {
        let lines: Vec<String> = (0..10_000)
            .map(|i| format!("line {i} {}", "x".repeat(500)))
            .collect();
        let shown = cut_lines(&lines, 40, 8 * 1024);
        assert_eq!(shown.len(), 41);
        assert!(shown[0].starts_with("line 0 "));
        assert!(shown[40].starts_with("line 9999 "));
        assert!(shown[30].starts_with("… 9960 line(s), "), "{}", shown[30]);
        assert!(shown.iter().map(String::len).sum::<usize>() < 12 * 1024);
        let few = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(cut_lines(&few, 40, 1024), few);
        // Few lines, one of them huge: that one is cut.
        let long = vec!["a".to_owned(), "y".repeat(100_000)];
        let shown = cut_lines(&long, 40, 8 * 1024);
        assert_eq!(shown[0], "a");
        assert!(shown[1].len() < 5000 && shown[1].contains("bytes cut"));
    }
}
