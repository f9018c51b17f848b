//! The nom error type shared by moped's text readers (GOAL schedules, gem5's stats.txt):
//! where in the input a parse failed and what was expected there, turned into
//! `file:line:col` by each reader.

use std::borrow::Cow;

use nom::error::{ErrorKind, ParseError};
use nom::IResult;

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
