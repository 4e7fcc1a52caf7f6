//! Reading keys: one per line, hex one per line, or length-prefixed binary.

use clap::ValueEnum;
use std::borrow::Cow;

/// How keys are written in an input file or on standard input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeyFormat {
    /// One key per line, its bytes as they are (a trailing `\r` is dropped). Empty lines are
    /// refused.
    Lines,
    /// One key per line in hexadecimal (`6b6579` for `key`); spaces around it are ignored.
    Hex,
    /// Each key a 4-byte little-endian length, then that many bytes.
    Binary,
}

/// A key that could not be read: where, and what is wrong.
#[derive(Debug, PartialEq, Eq)]
pub struct BadKey(pub String);

/// The keys in `input`, in order: slices of it, or for hex the decoded bytes.
pub fn parse(input: &[u8], format: KeyFormat) -> Result<Vec<Cow<'_, [u8]>>, BadKey> {
    match format {
        KeyFormat::Lines => lines(input)
            .map(|(n, line)| {
                if line.is_empty() {
                    Err(BadKey(format!(
                        "line {n}: empty key (an empty key needs --format binary)"
                    )))
                } else {
                    Ok(Cow::Borrowed(line))
                }
            })
            .collect(),
        KeyFormat::Hex => lines(input)
            .map(|(n, line)| {
                hex(line)
                    .map(Cow::Owned)
                    .map_err(|e| BadKey(format!("line {n}: {e}")))
            })
            .collect(),
        KeyFormat::Binary => binary(input),
    }
}

/// Numbered lines (from 1) without their `\n` or `\r\n`; a final newline ends the last line
/// rather than starting an empty one.
fn lines(input: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    let empty = input.is_empty();
    body.split(|&b| b == b'\n')
        .filter(move |_| !empty)
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .enumerate()
        .map(|(i, line)| (i + 1, line))
}

fn hex(line: &[u8]) -> Result<Vec<u8>, String> {
    let text = line.trim_ascii();
    if text.is_empty() {
        return Err("empty key".into());
    }
    if !text.len().is_multiple_of(2) {
        return Err(format!(
            "odd number of hex digits ({}): a byte is two digits",
            text.len()
        ));
    }
    let digit = |at: usize| {
        let c = text[at];
        (c as char).to_digit(16).map(|d| d as u8).ok_or_else(|| {
            format!(
                "{:?} at column {} is not a hex digit",
                c as char,
                at + 1 + (line.len() - line.trim_ascii_start().len())
            )
        })
    };
    (0..text.len() / 2)
        .map(|i| Ok(digit(2 * i)? << 4 | digit(2 * i + 1)?))
        .collect()
}

fn binary(input: &[u8]) -> Result<Vec<Cow<'_, [u8]>>, BadKey> {
    let mut keys = Vec::new();
    let mut at = 0usize;
    while at < input.len() {
        let Some(prefix) = input.get(at..at + 4) else {
            return Err(BadKey(format!(
                "byte {at}: key {} has a truncated length prefix ({} of 4 bytes)",
                keys.len() + 1,
                input.len() - at
            )));
        };
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        let start = at + 4;
        let Some(key) = input.get(start..start.saturating_add(len)) else {
            return Err(BadKey(format!(
                "byte {at}: key {} says {len} bytes, but only {} follow",
                keys.len() + 1,
                input.len() - start
            )));
        };
        keys.push(Cow::Borrowed(key));
        at = start + len;
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(input: &[u8], format: KeyFormat) -> Vec<Vec<u8>> {
        parse(input, format)
            .unwrap()
            .into_iter()
            .map(Cow::into_owned)
            .collect()
    }

    fn bad(input: &[u8], format: KeyFormat) -> String {
        parse(input, format).unwrap_err().0
    }

    #[test]
    fn lines_are_keys_without_their_line_ends() {
        assert_eq!(
            ok(b"a\nbb\r\nc", KeyFormat::Lines),
            [b"a".to_vec(), b"bb".to_vec(), b"c".to_vec()]
        );
        assert_eq!(ok(b"a\n", KeyFormat::Lines), [b"a".to_vec()]);
        assert!(ok(b"", KeyFormat::Lines).is_empty());
        assert_eq!(ok(b" x \n", KeyFormat::Lines), [b" x ".to_vec()]);
        assert_eq!(
            bad(b"a\n\nb\n", KeyFormat::Lines),
            "line 2: empty key (an empty key needs --format binary)"
        );
    }

    #[test]
    fn hex_lines_decode_and_say_where_they_are_wrong() {
        assert_eq!(
            ok(b"6b6579\n  00FF \n", KeyFormat::Hex),
            [b"key".to_vec(), vec![0, 255]]
        );
        assert_eq!(
            bad(b"00\n0g\n", KeyFormat::Hex),
            "line 2: 'g' at column 2 is not a hex digit"
        );
        assert_eq!(
            bad(b"  abc\n", KeyFormat::Hex),
            "line 1: odd number of hex digits (3): a byte is two digits"
        );
        assert_eq!(bad(b"00\n\n", KeyFormat::Hex), "line 2: empty key");
    }

    #[test]
    fn binary_keys_are_length_prefixed() {
        let mut input = Vec::new();
        for key in [&b"k1"[..], b"", b"longer key"] {
            input.extend_from_slice(&(key.len() as u32).to_le_bytes());
            input.extend_from_slice(key);
        }
        assert_eq!(
            ok(&input, KeyFormat::Binary),
            [b"k1".to_vec(), vec![], b"longer key".to_vec()]
        );
        assert_eq!(
            bad(&input[..input.len() - 1], KeyFormat::Binary),
            "byte 10: key 3 says 10 bytes, but only 9 follow"
        );
        assert_eq!(
            bad(&input[..7], KeyFormat::Binary),
            "byte 6: key 2 has a truncated length prefix (1 of 4 bytes)"
        );
        // A length prefix that lies about a huge key allocates nothing.
        assert_eq!(
            bad(&u32::MAX.to_le_bytes(), KeyFormat::Binary),
            "byte 0: key 1 says 4294967295 bytes, but only 0 follow"
        );
    }
}
