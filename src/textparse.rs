//! What moped's text readers share: the 1-based line and column of a byte offset, the
//! positioned error every format reports (`file:line:col: msg`), and the nom error type of
//! the nom-based readers (GOAL schedules, gem5's stats.txt, protocol files): where in the
//! input a parse failed and what was expected there.

use std::borrow::Cow;
use std::fmt;

use nom::error::{ErrorKind, ParseError};
use nom::IResult;

/// A message about a place in a text file: `file:line:col: msg`, line and column from 1
/// (columns count characters). A reader that cannot open its file names no place in it and
/// says which line and column it reports then (GOAL schedules 0:0, specs and programs 1:1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: {msg}")]
pub struct PosError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub msg: String,
}

impl PosError {
    /// An error at `(line, col)` of `file`.
    pub fn new(file: impl Into<String>, (line, col): (u32, u32), msg: impl Into<String>) -> Self {
        PosError {
            file: file.into(),
            line,
            col,
            msg: msg.into(),
        }
    }

    /// An error at byte offset `off` of `text`, the contents of `file`.
    pub fn at(file: impl Into<String>, text: &str, off: usize, msg: impl Into<String>) -> Self {
        PosError::new(file, line_col(text, off), msg)
    }
}

/// An error reading a file that may be about the whole file rather than a place in it:
/// line 0 says it could not be read, and the message is then `file: msg`; otherwise it is
/// the [`PosError`]'s. gem5's statistics and configuration readers report this way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError(pub PosError);

impl FileError {
    /// The file could not be read.
    pub fn unreadable(file: impl Into<String>, msg: impl Into<String>) -> Self {
        FileError(PosError::new(file, (0, 0), msg))
    }
}

impl From<PosError> for FileError {
    fn from(e: PosError) -> Self {
        FileError(e)
    }
}

impl std::ops::Deref for FileError {
    type Target = PosError;

    fn deref(&self) -> &PosError {
        &self.0
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.line {
            0 => write!(f, "{}: {}", self.0.file, self.0.msg),
            _ => self.0.fmt(f),
        }
    }
}

impl std::error::Error for FileError {}

/// The text of a file's `bytes` (`file` names it in errors), without the byte-order mark
/// some editors write first; bytes that are not UTF-8 are an error at the first bad one.
pub fn utf8_text<'a>(file: &str, bytes: &'a [u8]) -> Result<&'a str, PosError> {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        // The valid prefix gives the bad byte's line and column.
        let good = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or("");
        PosError::at(
            file,
            good,
            good.len(),
            format!(
                "invalid UTF-8 (byte {:#04x}); the file must be UTF-8 text",
                bytes[e.valid_up_to()]
            ),
        )
    })
}

/// 1-based (line, column in characters) of byte offset `off` in `text`. An offset past the
/// end counts as the end, one inside a character as the start of that character.
pub fn line_col(text: &str, off: usize) -> (u32, u32) {
    LineIndex::new(text).pos(off)
}

/// The line starts of a text, for readers that locate many offsets: each lookup is a binary
/// search rather than a scan from the start. Agrees with [`line_col`].
pub(crate) struct LineIndex<'a> {
    src: &'a str,
    starts: Vec<usize>,
    ascii: bool,
}

thread_local! {
    /// Bytes this thread's line indexes have scanned (see [`bytes_indexed`]).
    static INDEXED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bytes of text this thread has scanned for line starts so far. Every reader locates its
/// positions through a [`LineIndex`], so a reader that indexes its file once keeps this
/// within the file's length: the measure of work by which tests hold parsing linear.
pub fn bytes_indexed() -> u64 {
    INDEXED.with(std::cell::Cell::get)
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        INDEXED.with(|n| n.set(n.get() + src.len() as u64));
        let mut starts = vec![0];
        starts.extend(src.match_indices('\n').map(|(k, _)| k + 1));
        LineIndex {
            src,
            starts,
            ascii: src.is_ascii(),
        }
    }

    /// 1-based (line, column in characters) of byte offset `off`.
    pub(crate) fn pos(&self, off: usize) -> (u32, u32) {
        let mut off = off.min(self.src.len());
        while !self.src.is_char_boundary(off) {
            off -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= off);
        let start = self.starts[line - 1];
        // In ASCII text a byte is a character: no need to walk the line.
        let col = if self.ascii {
            off - start
        } else {
            self.src[start..off].chars().count()
        };
        (to_u32(line), to_u32(col + 1))
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The message of a TOML reader's error. The TOML parser has none for a character it cannot
/// place in any rule (a carriage return without its line feed); the character is named then.
pub fn toml_message(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim();
    if !msg.is_empty() {
        return msg.to_string();
    }
    let at = e.span().and_then(|s| text.get(s.start..));
    match at.and_then(|t| t.chars().next()) {
        Some('\r') => "expected a line feed after the carriage return".to_string(),
        Some(c) => format!("unexpected character {c:?}"),
        None => "unexpected end of file".to_string(),
    }
}

/// A failed expectation: where, and what was expected there.
#[derive(Debug)]
pub(crate) struct PErr<'a> {
    pub at: &'a str,
    pub msg: Cow<'static, str>,
}

impl<'a> ParseError<&'a str> for PErr<'a> {
    fn from_error_kind(at: &'a str, kind: ErrorKind) -> Self {
        PErr {
            at,
            msg: Cow::Owned(format!("unexpected input ({kind:?})")),
        }
    }

    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }
}

pub(crate) type PResult<'a, T> = IResult<&'a str, T, PErr<'a>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: a non-UTF-8 protocol file had no position, and a BOM was reported as an
    /// invisible character.
    #[test]
    fn utf8_text_skips_a_bom_and_places_a_bad_byte() {
        assert_eq!(
            utf8_text("f.sm", b"\xef\xbb\xbfstate I;\n"),
            Ok("state I;\n")
        );
        let e = utf8_text("f.sm", b"a\nbc\xff d\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.sm:2:3: invalid UTF-8 (byte 0xff); the file must be UTF-8 text"
        );
    }

    /// The column of each offset as the readers counted it before they shared this helper:
    /// lines split at `\n`, columns in characters.
    fn by_hand(text: &str, off: usize) -> (u32, u32) {
        let before = &text[..off];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        (line as u32, col as u32)
    }

    #[test]
    fn line_and_column_of_every_offset() {
        for text in [
            "",
            "a",
            "ab\ncd\n",
            "\n\nx",
            "é\nçà b\r\n€x",
            "x\u{1F600}y\nz",
        ] {
            let index = LineIndex::new(text);
            for off in (0..=text.len()).filter(|&o| text.is_char_boundary(o)) {
                assert_eq!(line_col(text, off), by_hand(text, off), "{text:?} at {off}");
                assert_eq!(index.pos(off), by_hand(text, off), "{text:?} at {off}");
            }
        }
    }

    #[test]
    fn offsets_past_the_end_or_inside_a_character() {
        assert_eq!(line_col("ab\nc", 99), (2, 2));
        // Byte 2 is inside `é` (bytes 1..3): it counts as the `é`.
        assert_eq!(line_col("aé", 2), (1, 2));
    }

    /// A lone carriage return: the TOML parser names nothing, the readers name it.
    #[test]
    fn toml_message_names_a_lone_carriage_return() {
        let text = "# generated\r\r\n";
        let e = toml::from_str::<toml::Table>(text).unwrap_err();
        assert_eq!(
            toml_message(text, &e),
            "expected a line feed after the carriage return"
        );
    }

    #[test]
    fn messages() {
        let e = PosError::at("f.txt", "ab\ncd", 4, "bad");
        assert_eq!(e.to_string(), "f.txt:2:2: bad");
        assert_eq!(PosError::new("s", (0, 0), "m").to_string(), "s:0:0: m");
        let gone = FileError::unreadable("s", "cannot read");
        assert_eq!(gone.to_string(), "s: cannot read");
        assert_eq!(FileError::from(e).to_string(), "f.txt:2:2: bad");
    }
}
