//! The nom-based parser and the table builder behind [`parse_machine`] and
//! [`apply_overlay`].

use std::borrow::Cow;
use std::collections::HashMap;

use nom::bytes::complete::take_while;
use nom::character::complete::{char as nchar, satisfy};
use nom::combinator::recognize;
use nom::sequence::pair;

use crate::textparse::{LineIndex, PErr, PResult};

use super::{
    ActionId, Cell, EventDecl, EventId, Machine, OverlayInfo, Permission, ProtocolError, StateDecl,
    StateId, TransitionInfo,
};

/// Largest table (states x events) a machine may have.
const MAX_CELLS: usize = 1 << 24;

fn ferr(at: &str, msg: impl Into<String>) -> nom::Err<PErr<'_>> {
    nom::Err::Failure(PErr {
        at,
        msg: Cow::Owned(msg.into()),
    })
}

fn fail<'a, T>(at: &'a str, msg: impl Into<String>) -> Result<T, nom::Err<PErr<'a>>> {
    Err(ferr(at, msg))
}

/// Skips whitespace and comments.
fn skip_ws(mut i: &str) -> PResult<'_, ()> {
    loop {
        let (rest, _) = take_while::<_, &str, PErr>(char::is_whitespace)(i)?;
        i = rest;
        if let Some(body) = i.strip_prefix("//") {
            let end = body.find('\n').map_or(body.len(), |n| n + 1);
            i = &body[end..];
        } else if let Some(body) = i.strip_prefix("/*") {
            match body.find("*/") {
                Some(n) => i = &body[n + 2..],
                None => return fail(i, "unterminated block comment"),
            }
        } else {
            return Ok((i, ()));
        }
    }
}

/// Skips whitespace and returns the input at the next token (twice).
fn tok(i: &str) -> PResult<'_, &str> {
    let (i, ()) = skip_ws(i)?;
    Ok((i, i))
}

fn ident_raw(i: &str) -> PResult<'_, &str> {
    recognize(pair(
        satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))(i)
}

/// A short description of the token at `i`, for error messages.
fn found(i: &str) -> String {
    if i.is_empty() {
        return "end of file".to_string();
    }
    if let Ok((_, id)) = ident_raw(i) {
        if id.len() > 40 {
            return format!("'{}...'", &id[..40]);
        }
        return format!("'{id}'");
    }
    let c = i.chars().next().unwrap_or('\0');
    if c.is_control() || c == '\u{FFFD}' || c.is_whitespace() {
        format!("{c:?}")
    } else {
        format!("'{c}'")
    }
}

/// Expects the character `c` after optional whitespace.
fn expect_char<'a>(i: &'a str, c: char, what: &str) -> PResult<'a, ()> {
    let (i, at) = tok(i)?;
    match nchar::<_, PErr>(c)(at) {
        Ok((rest, _)) => Ok((rest, ())),
        Err(_) => fail(i, format!("{what}, found {}", found(at))),
    }
}

/// Expects an identifier after optional whitespace; returns it and the input at it.
fn expect_ident<'a>(i: &'a str, what: &str) -> PResult<'a, (&'a str, &'a str)> {
    let (i, at) = tok(i)?;
    match ident_raw(at) {
        Ok((rest, id)) => Ok((rest, (id, at))),
        Err(_) => fail(i, format!("expected {what}, found {}", found(at))),
    }
}

/// If the next token is the identifier `kw`, consumes it.
fn keyword<'a>(i: &'a str, kw: &str) -> Option<&'a str> {
    match ident_raw(i) {
        Ok((rest, id)) if id == kw => Some(rest),
        _ => None,
    }
}

/// A string literal starting at `i` (which begins with `"`); it may not span lines.
fn string_lit(i: &str) -> PResult<'_, String> {
    let start = i;
    let body = &i[1..];
    let mut out = String::new();
    let mut chars = body.char_indices();
    loop {
        match chars.next() {
            None | Some((_, '\n')) => return fail(start, "unterminated string"),
            Some((k, '"')) => return Ok((&body[k + 1..], out)),
            Some((_, '\\')) => match chars.next() {
                Some((_, '"')) => out.push('"'),
                Some((_, '\\')) => out.push('\\'),
                Some((k, c)) => {
                    return fail(
                        &body[k - 1..],
                        format!(
                            "invalid escape '\\{c}' in string (only \\\" and \\\\ are allowed)"
                        ),
                    )
                }
                None => return fail(start, "unterminated string"),
            },
            Some((_, c)) => out.push(c),
        }
    }
}

/// `desc = "..."`.
fn desc_clause(i: &str) -> PResult<'_, String> {
    let (_, at) = tok(i)?;
    let Some(i) = keyword(at, "desc") else {
        return fail(at, format!("expected 'desc=\"...\"', found {}", found(at)));
    };
    let (i, ()) = expect_char(i, '=', "expected '=' after 'desc'")?;
    let (_, at) = tok(i)?;
    if !at.starts_with('"') {
        return fail(
            at,
            format!("expected a string after 'desc=', found {}", found(at)),
        );
    }
    string_lit(at)
}

/// `[',' desc] ')'`, returning the description (empty if absent).
fn opt_desc_close<'a>(i: &'a str, after: &str) -> PResult<'a, String> {
    let (_, at) = tok(i)?;
    if let Some(rest) = at.strip_prefix(',') {
        let (i, d) = desc_clause(rest)?;
        let (i, ()) = expect_char(i, ')', "expected ')' after description")?;
        Ok((i, d))
    } else if let Some(rest) = at.strip_prefix(')') {
        Ok((rest, String::new()))
    } else {
        fail(
            at,
            format!("expected ',' or ')' after {after}, found {}", found(at)),
        )
    }
}

/// `[',' desc] ';'` ending a declaration, returning the description (empty if absent).
fn opt_desc_end<'a>(i: &'a str, decl: &str, after: &str) -> PResult<'a, String> {
    let (_, at) = tok(i)?;
    if let Some(rest) = at.strip_prefix(',') {
        let (i, d) = desc_clause(rest)?;
        let (i, ()) = expect_char(i, ';', &format!("expected ';' after {decl}"))?;
        Ok((i, d))
    } else if let Some(rest) = at.strip_prefix(';') {
        Ok((rest, String::new()))
    } else {
        fail(
            at,
            format!("expected ',' or ';' after {after}, found {}", found(at)),
        )
    }
}

/// `AccessPermission ':' PERM`.
fn access_permission(i: &str) -> PResult<'_, Permission> {
    let (_, at) = tok(i)?;
    let Some(i) = keyword(at, "AccessPermission") else {
        return fail(
            at,
            format!(
                "expected 'AccessPermission:<permission>', found {}",
                found(at)
            ),
        );
    };
    let (i, ()) = expect_char(i, ':', "expected ':' after 'AccessPermission'")?;
    let (i, (perm, perm_at)) = expect_ident(i, "access permission")?;
    let Some(permission) = Permission::from_dsl(perm) else {
        return fail(
            perm_at,
            format!(
                "unknown access permission '{perm}' (expected Invalid, NotPresent, Busy, Read_Only or Read_Write)"
            ),
        );
    };
    Ok((i, permission))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `None`: stay in the same state.
    Transition(Option<StateId>),
    Stall,
    Impossible,
}

/// One transition/stall/impossible statement.
struct Item {
    acts: Vec<ActionId>,
    names: Vec<String>,
    file: String,
    line: u32,
    col: u32,
}

#[derive(Clone, Copy)]
struct CellDef {
    kind: Kind,
    item: usize,
    /// Defined by the base machine (and not yet overridden by this overlay).
    from_base: bool,
}

/// Accumulates declarations and cells while a file is parsed.
struct Builder<'a> {
    src: &'a str,
    file: &'a str,
    lines: LineIndex<'a>,
    overlay: bool,
    actions: HashMap<&'a str, ActionId>,
    name: String,
    desc: String,
    base_file: String,
    states: Vec<StateDecl>,
    state_files: Vec<String>,
    state_index: HashMap<String, StateId>,
    events: Vec<EventDecl>,
    event_files: Vec<String>,
    event_index: HashMap<String, EventId>,
    states_pos: (u32, u32),
    events_pos: (u32, u32),
    items: Vec<Item>,
    cells: HashMap<(StateId, EventId), CellDef>,
    overlays: Vec<OverlayInfo>,
}

fn registry<'a>(actions: &[&'a str]) -> HashMap<&'a str, ActionId> {
    let mut map = HashMap::new();
    for (k, a) in actions.iter().enumerate().take(usize::from(u16::MAX)) {
        map.entry(*a).or_insert(k as ActionId);
    }
    map
}

impl<'a> Builder<'a> {
    fn new(src: &'a str, file: &'a str, actions: &[&'a str], overlay: bool) -> Self {
        Builder {
            src,
            file,
            lines: LineIndex::new(src),
            overlay,
            actions: registry(actions),
            name: String::new(),
            desc: String::new(),
            base_file: file.to_string(),
            states: Vec::new(),
            state_files: Vec::new(),
            state_index: HashMap::new(),
            events: Vec::new(),
            event_files: Vec::new(),
            event_index: HashMap::new(),
            states_pos: (1, 1),
            events_pos: (1, 1),
            items: Vec::new(),
            cells: HashMap::new(),
            overlays: Vec::new(),
        }
    }

    fn pos(&self, at: &str) -> (u32, u32) {
        self.lines.pos(self.src.len() - at.len())
    }

    fn error_at(&self, at: &str, msg: String) -> ProtocolError {
        let (line, col) = self.pos(at);
        ProtocolError {
            file: self.file.to_string(),
            line,
            col,
            msg,
        }
    }

    /// `line:col`, prefixed with the file when it is not the current one.
    fn where_(&self, file: &str, line: u32, col: u32) -> String {
        if file == self.file {
            format!("{line}:{col}")
        } else {
            format!("{file}:{line}:{col}")
        }
    }

    /// Runs the whole parse; the first error wins.
    fn run(&mut self, base_name: Option<&str>) -> Result<(), ProtocolError> {
        match self.file_body(self.src, base_name) {
            Ok(_) => Ok(()),
            Err(nom::Err::Failure(e)) | Err(nom::Err::Error(e)) => {
                Err(self.error_at(e.at, e.msg.into_owned()))
            }
            Err(nom::Err::Incomplete(_)) => Err(self.error_at("", "unexpected end of file".into())),
        }
    }

    fn file_body(&mut self, i: &'a str, base_name: Option<&str>) -> PResult<'a, ()> {
        let i = self.header(i, base_name)?;
        let (i, at) = tok(i)?;
        let i = if let Some(rest) = keyword(at, "state_declaration") {
            self.states_pos = self.pos(at);
            self.state_block(rest)?
        } else if self.overlay {
            i
        } else {
            return fail(
                at,
                format!("expected 'state_declaration', found {}", found(at)),
            );
        };
        let (i, at) = tok(i)?;
        let mut i = if let Some(rest) = keyword(at, "enumeration") {
            self.events_pos = self.pos(at);
            self.event_block(rest)?
        } else if self.overlay {
            i
        } else {
            return fail(
                at,
                format!("expected 'enumeration(Event, ...)', found {}", found(at)),
            );
        };
        loop {
            let (rest, at) = tok(i)?;
            if at.is_empty() {
                return Ok((rest, ()));
            }
            i = self.item(at)?;
        }
    }

    fn header(
        &mut self,
        i: &'a str,
        base_name: Option<&str>,
    ) -> Result<&'a str, nom::Err<PErr<'a>>> {
        let (_, at) = tok(i)?;
        let want = if self.overlay { "overlay" } else { "machine" };
        let Some(i) = keyword(at, want) else {
            let msg = match (self.overlay, ident_raw(at)) {
                (false, Ok((_, "overlay"))) => {
                    "expected 'machine(...)' header, found 'overlay' (overlay files are loaded with apply_overlay)".to_string()
                }
                (true, Ok((_, "machine"))) => {
                    "expected 'overlay(...)' header, found 'machine' (an overlay file must start with overlay(...))".to_string()
                }
                _ => format!("expected '{want}(...)' header, found {}", found(at)),
            };
            return fail(at, msg);
        };
        let (i, ()) = expect_char(i, '(', &format!("expected '(' after '{want}'"))?;
        let (i, (name, name_at)) = expect_ident(i, "machine name")?;
        if let Some(base) = base_name {
            if base != name {
                return fail(
                    name_at,
                    format!("overlay is for machine '{name}' but the base machine is '{base}'"),
                );
            }
        }
        let (i, desc) = opt_desc_close(i, "machine name")?;
        let (i, ()) = expect_char(i, ';', &format!("expected ';' after {want} header"))?;
        if self.overlay {
            self.overlays.push(OverlayInfo {
                file: self.file.to_string(),
                desc,
            });
        } else {
            self.name = name.to_string();
            self.desc = desc;
        }
        Ok(i)
    }

    /// `'(' NAME [',' desc] ')' '{'` after a block keyword.
    fn block_open(i: &'a str, kw: &str, name: &str) -> PResult<'a, ()> {
        let (i, ()) = expect_char(i, '(', &format!("expected '(' after '{kw}'"))?;
        let (_, at) = tok(i)?;
        let Some(i) = keyword(at, name) else {
            return fail(
                at,
                format!("expected '{name}' in {kw}(...), found {}", found(at)),
            );
        };
        let (i, _) = opt_desc_close(i, &format!("'{name}'"))?;
        let (i, ()) = expect_char(i, '{', &format!("expected '{{' to open the {kw} block"))?;
        Ok((i, ()))
    }

    fn state_block(&mut self, i: &'a str) -> Result<&'a str, nom::Err<PErr<'a>>> {
        let (mut i, ()) = Self::block_open(i, "state_declaration", "State")?;
        let mut count = 0usize;
        loop {
            let (_, at) = tok(i)?;
            if let Some(rest) = at.strip_prefix('}') {
                if count == 0 {
                    return fail(at, "expected at least one state declaration");
                }
                return Ok(rest);
            }
            i = self.state_entry(i)?;
            count += 1;
        }
    }

    fn state_entry(&mut self, i: &'a str) -> Result<&'a str, nom::Err<PErr<'a>>> {
        let (i, (name, at)) = expect_ident(i, "state name or '}'")?;
        if let Some(&s) = self.state_index.get(name) {
            let d = &self.states[s as usize];
            let w = self.where_(&self.state_files[s as usize], d.line, d.col);
            return fail(
                at,
                format!("duplicate state '{name}' (first declared at {w})"),
            );
        }
        if self.states.len() >= usize::from(u16::MAX) {
            return fail(at, "too many states (at most 65535)");
        }
        let (line, col) = self.pos(at);
        let (i, ()) = expect_char(i, ',', "expected ',' after state name")?;
        let (i, permission) = access_permission(i)?;
        let (i, ()) = expect_char(i, ',', "expected ',' after access permission")?;
        let (_, kat) = tok(i)?;
        let (i, stable) = if let Some(r) = keyword(kat, "stable") {
            (r, true)
        } else if let Some(r) = keyword(kat, "transient") {
            (r, false)
        } else {
            return fail(
                kat,
                format!("expected 'stable' or 'transient', found {}", found(kat)),
            );
        };
        let (i, desc) = opt_desc_end(i, "state declaration", "state kind")?;
        let id = self.states.len() as StateId;
        self.state_index.insert(name.to_string(), id);
        self.states.push(StateDecl {
            name: name.to_string(),
            stable,
            permission,
            desc,
            line,
            col,
        });
        self.state_files.push(self.file.to_string());
        Ok(i)
    }

    fn event_block(&mut self, i: &'a str) -> Result<&'a str, nom::Err<PErr<'a>>> {
        let (mut i, ()) = Self::block_open(i, "enumeration", "Event")?;
        let mut count = 0usize;
        loop {
            let (_, at) = tok(i)?;
            if let Some(rest) = at.strip_prefix('}') {
                if count == 0 {
                    return fail(at, "expected at least one event declaration");
                }
                return Ok(rest);
            }
            i = self.event_entry(i)?;
            count += 1;
        }
    }

    fn event_entry(&mut self, i: &'a str) -> Result<&'a str, nom::Err<PErr<'a>>> {
        let (i, (name, at)) = expect_ident(i, "event name or '}'")?;
        if let Some(&e) = self.event_index.get(name) {
            let d = &self.events[e as usize];
            let w = self.where_(&self.event_files[e as usize], d.line, d.col);
            return fail(
                at,
                format!("duplicate event '{name}' (first declared at {w})"),
            );
        }
        if self.events.len() >= usize::from(u16::MAX) {
            return fail(at, "too many events (at most 65535)");
        }
        let (line, col) = self.pos(at);
        let (i, desc) = opt_desc_end(i, "event declaration", "event name")?;
        let id = self.events.len() as EventId;
        self.event_index.insert(name.to_string(), id);
        self.events.push(EventDecl {
            name: name.to_string(),
            desc,
            line,
            col,
        });
        self.event_files.push(self.file.to_string());
        Ok(i)
    }

    /// A state or event set: `NAME` or `{A, B, ...}`, resolved as it is read.
    fn name_set(&self, i: &'a str, events: bool) -> PResult<'a, Vec<u16>> {
        let what = if events { "event" } else { "state" };
        let resolve = |name: &str, at: &'a str| -> Result<u16, nom::Err<PErr<'a>>> {
            let idx = if events {
                &self.event_index
            } else {
                &self.state_index
            };
            match idx.get(name) {
                Some(&id) => Ok(id),
                None => Err(ferr(at, format!("unknown {what} '{name}'"))),
            }
        };
        let (_, at) = tok(i)?;
        if let Some(mut i) = at.strip_prefix('{') {
            let mut out: Vec<u16> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            loop {
                let (rest, (name, nat)) = expect_ident(i, &format!("{what} name"))?;
                let id = resolve(name, nat)?;
                if !seen.insert(id) {
                    return fail(nat, format!("{what} '{name}' listed twice in the set"));
                }
                out.push(id);
                let (_, sep) = tok(rest)?;
                if let Some(r) = sep.strip_prefix(',') {
                    i = r;
                } else if let Some(r) = sep.strip_prefix('}') {
                    return Ok((r, out));
                } else {
                    return fail(
                        sep,
                        format!("expected ',' or '}}' in {what} set, found {}", found(sep)),
                    );
                }
            }
        } else {
            match ident_raw(at) {
                Ok((rest, name)) => Ok((rest, vec![resolve(name, at)?])),
                Err(_) => fail(
                    at,
                    format!("expected {what} name or '{{', found {}", found(at)),
                ),
            }
        }
    }

    /// One statement, starting at its first token `at` (its `override`, if any): its
    /// position is where a table row made from it points.
    fn item(&mut self, at: &'a str) -> Result<&'a str, nom::Err<PErr<'a>>> {
        let (i, is_override) = match keyword(at, "override") {
            Some(rest) => {
                if !self.overlay {
                    return fail(at, "'override' is only allowed in overlay files");
                }
                let (_, kat) = tok(rest)?;
                (kat, true)
            }
            None => (at, false),
        };
        let (i, word) = self.statement_keyword(i, is_override)?;
        let (i, ()) = expect_char(i, '(', &format!("expected '(' after '{word}'"))?;
        let (i, states) = self.name_set(i, false)?;
        let (i, ()) = expect_char(i, ',', "expected ',' after states")?;
        let (i, events) = self.name_set(i, true)?;
        let (i, kind, acts, names) = if word == "transition" {
            self.transition_tail(i)?
        } else {
            let (i, ()) = expect_char(i, ')', "expected ')' after events")?;
            let (i, ()) = expect_char(i, ';', &format!("expected ';' after {word}(...)"))?;
            let kind = if word == "stall" {
                Kind::Stall
            } else {
                Kind::Impossible
            };
            (i, kind, Vec::new(), Vec::new())
        };
        let (line, col) = self.pos(at);
        let item = self.items.len();
        for &s in &states {
            for &e in &events {
                self.define(at, s, e, kind, item, is_override)?;
            }
        }
        self.items.push(Item {
            acts,
            names,
            file: self.file.to_string(),
            line,
            col,
        });
        Ok(i)
    }

    /// The keyword that starts a statement: `transition`, `stall` or `impossible`.
    fn statement_keyword(&self, i: &'a str, is_override: bool) -> PResult<'a, &'a str> {
        match ident_raw(i) {
            Ok((rest, w @ ("transition" | "stall" | "impossible"))) => Ok((rest, w)),
            Ok((_, w @ ("machine" | "overlay" | "state_declaration" | "enumeration"))) if !is_override => {
                fail(
                    i,
                    format!(
                        "'{w}' is out of place: sections must appear in order (header, state_declaration, enumeration, transitions)"
                    ),
                )
            }
            _ => {
                let msg = if is_override {
                    format!("expected 'transition', 'stall' or 'impossible' after 'override', found {}", found(i))
                } else if self.overlay {
                    format!("expected 'transition', 'stall', 'impossible', 'override' or end of file, found {}", found(i))
                } else {
                    format!("expected 'transition', 'stall', 'impossible' or end of file, found {}", found(i))
                };
                fail(i, msg)
            }
        }
    }

    /// The rest of a transition after its events: `[',' NEXT] ')' '{' (ACTION ';')* '}'`.
    #[allow(clippy::type_complexity)]
    fn transition_tail(
        &self,
        i: &'a str,
    ) -> Result<(&'a str, Kind, Vec<ActionId>, Vec<String>), nom::Err<PErr<'a>>> {
        let (_, sep) = tok(i)?;
        let (i, next) = if let Some(r) = sep.strip_prefix(',') {
            let (r, (nname, nat)) = expect_ident(r, "next state name")?;
            let Some(&n) = self.state_index.get(nname) else {
                return fail(nat, format!("unknown next state '{nname}'"));
            };
            let (r, ()) = expect_char(r, ')', "expected ')' after next state")?;
            (r, Some(n))
        } else if let Some(r) = sep.strip_prefix(')') {
            (r, None)
        } else {
            return fail(
                sep,
                format!("expected ',' or ')' after events, found {}", found(sep)),
            );
        };
        let (mut i, ()) = expect_char(i, '{', "expected '{' to open transition actions")?;
        let mut acts = Vec::new();
        let mut names = Vec::new();
        loop {
            let (_, aat) = tok(i)?;
            if let Some(r) = aat.strip_prefix('}') {
                return Ok((r, Kind::Transition(next), acts, names));
            }
            let (r, (aname, nat)) = expect_ident(i, "action name or '}'")?;
            let Some(&a) = self.actions.get(aname) else {
                return fail(nat, format!("unknown action '{aname}'"));
            };
            if acts.len() >= usize::from(u16::MAX) {
                return fail(nat, "too many actions in one transition (at most 65535)");
            }
            acts.push(a);
            names.push(aname.to_string());
            let (r, ()) = expect_char(r, ';', "expected ';' after transition actions")?;
            i = r;
        }
    }

    fn define(
        &mut self,
        at: &'a str,
        s: StateId,
        e: EventId,
        kind: Kind,
        item: usize,
        is_override: bool,
    ) -> Result<(), nom::Err<PErr<'a>>> {
        let cell = format!(
            "({}, {})",
            self.states[s as usize].name, self.events[e as usize].name
        );
        match self.cells.get(&(s, e)).copied() {
            // An override replaces a base cell; anything else defined already is a duplicate.
            Some(old) if !(is_override && old.from_base) => {
                let first = match self.items.get(old.item) {
                    Some(it) => self.where_(&it.file, it.line, it.col),
                    // Defined earlier by the statement being processed.
                    None => {
                        let (l, c) = self.pos(at);
                        format!("{l}:{c}")
                    }
                };
                let hint = if old.from_base {
                    " (use 'override' to replace it)"
                } else {
                    ""
                };
                Err(ferr(
                    at,
                    format!("duplicate cell {cell}: first defined at {first}{hint}"),
                ))
            }
            None if is_override => Err(ferr(
                at,
                format!(
                    "override of cell {cell}, which the base machine '{}' does not define",
                    self.name
                ),
            )),
            _ => {
                let def = CellDef {
                    kind,
                    item,
                    from_base: false,
                };
                self.cells.insert((s, e), def);
                Ok(())
            }
        }
    }

    /// Seeds the builder with a loaded base machine (for overlays).
    fn load_base(&mut self, base: &Machine) -> Result<(), ProtocolError> {
        self.name = base.name.clone();
        self.desc = base.desc.clone();
        self.base_file = base.file.clone();
        self.states = base.states.clone();
        self.state_files = base.state_files.clone();
        self.state_index = base.state_index.clone();
        self.events = base.events.clone();
        self.event_files = base.events.iter().map(|_| base.file.clone()).collect();
        self.event_index = base.event_index.clone();
        self.states_pos = base.states_pos;
        self.events_pos = base.events_pos;
        self.overlays = base.overlays.clone();
        for t in &base.transitions {
            let mut acts = Vec::with_capacity(t.action_names.len());
            for n in &t.action_names {
                match self.actions.get(n.as_str()) {
                    Some(&a) => acts.push(a),
                    None => {
                        return Err(ProtocolError {
                            file: t.file.clone(),
                            line: t.line,
                            col: t.col,
                            msg: format!("action '{n}' of the base machine is not in the action registry given for the overlay"),
                        })
                    }
                }
            }
            let kind = match t.cell {
                Cell::Transition { next, .. } => Kind::Transition(Some(next)),
                Cell::Stall => Kind::Stall,
                Cell::Impossible => Kind::Impossible,
            };
            self.cells.insert(
                (t.state, t.event),
                CellDef {
                    kind,
                    item: self.items.len(),
                    from_base: true,
                },
            );
            self.items.push(Item {
                acts,
                names: t.action_names.clone(),
                file: t.file.clone(),
                line: t.line,
                col: t.col,
            });
        }
        Ok(())
    }

    /// Checks completeness and compiles the dense table.
    fn finish(self) -> Result<Machine, ProtocolError> {
        let ns = self.states.len();
        let ne = self.events.len();
        if ns.saturating_mul(ne) > MAX_CELLS {
            return Err(ProtocolError {
                file: self.base_file.clone(),
                line: self.events_pos.0,
                col: self.events_pos.1,
                msg: format!(
                    "table too large: {ns} states x {ne} events exceeds {MAX_CELLS} cells"
                ),
            });
        }
        let mut table = Compiled {
            cells: Vec::with_capacity(ns * ne),
            counted: Vec::new(),
            transitions: Vec::with_capacity(self.cells.len()),
            action_seq: Vec::new(),
            item_first: vec![None; self.items.len()],
        };
        for s in 0..ns as StateId {
            for e in 0..ne as EventId {
                let Some(def) = self.cells.get(&(s, e)) else {
                    return Err(self.incomplete(s, e));
                };
                table.push(s, e, def, &self.items[def.item])?;
            }
        }
        Ok(Machine {
            name: self.name,
            desc: self.desc,
            file: self.base_file,
            states: self.states,
            state_files: self.state_files,
            events: self.events,
            state_index: self.state_index,
            event_index: self.event_index,
            states_pos: self.states_pos,
            events_pos: self.events_pos,
            n_events: ne,
            cells: table.cells,
            action_seq: table.action_seq,
            counted: table.counted,
            transitions: table.transitions,
            overlays: self.overlays,
        })
    }

    /// The error for a cell nobody defined, at the declaration of its state.
    fn incomplete(&self, s: StateId, e: EventId) -> ProtocolError {
        let d = &self.states[s as usize];
        ProtocolError {
            file: self.state_files[s as usize].clone(),
            line: d.line,
            col: d.col,
            msg: format!(
                "incomplete table: ({}, {}) is neither defined nor declared stall/impossible",
                d.name, self.events[e as usize].name
            ),
        }
    }
}

/// The dense table [`Builder::finish`] compiles, cell by cell in `(state, event)` order.
struct Compiled {
    cells: Vec<Cell>,
    counted: Vec<(StateId, EventId)>,
    transitions: Vec<TransitionInfo>,
    action_seq: Vec<ActionId>,
    /// Where each statement's action list starts in `action_seq`, once copied there: the
    /// cells of one statement share it.
    item_first: Vec<Option<u16>>,
}

impl Compiled {
    /// Compiles the cell `(s, e)`, defined by `def` from the statement `item`, and keeps
    /// the statement's position with it.
    fn push(
        &mut self,
        s: StateId,
        e: EventId,
        def: &CellDef,
        item: &Item,
    ) -> Result<(), ProtocolError> {
        let cell = match def.kind {
            Kind::Transition(next) => self.transition(s, e, next, def.item, item)?,
            Kind::Stall => Cell::Stall,
            Kind::Impossible => Cell::Impossible,
        };
        self.cells.push(cell);
        self.transitions.push(TransitionInfo {
            state: s,
            event: e,
            cell,
            action_names: if matches!(cell, Cell::Transition { .. }) {
                item.names.clone()
            } else {
                Vec::new()
            },
            file: item.file.clone(),
            line: item.line,
            col: item.col,
        });
        Ok(())
    }

    /// A transition cell: its actions (shared with the other cells of its statement) and
    /// its transition counter.
    fn transition(
        &mut self,
        s: StateId,
        e: EventId,
        next: Option<StateId>,
        k: usize,
        item: &Item,
    ) -> Result<Cell, ProtocolError> {
        let at_item = |msg: &str| ProtocolError {
            file: item.file.clone(),
            line: item.line,
            col: item.col,
            msg: msg.into(),
        };
        let first = match self.item_first[k] {
            Some(f) => f,
            None => {
                let Ok(f) = u16::try_from(self.action_seq.len()) else {
                    return Err(at_item(
                        "too many actions in the machine (the transitions' action lists hold at most 65,535 in all)",
                    ));
                };
                self.action_seq.extend_from_slice(&item.acts);
                self.item_first[k] = Some(f);
                f
            }
        };
        let Ok(n_actions) = u8::try_from(item.acts.len()) else {
            return Err(at_item("too many actions in one transition (at most 255)"));
        };
        let Ok(counter) = u16::try_from(self.counted.len()) else {
            return Err(at_item("too many transition cells in the machine"));
        };
        self.counted.push((s, e));
        Ok(Cell::Transition {
            next: next.unwrap_or(s),
            first_action: first,
            n_actions,
            counter,
        })
    }
}

/// Parses one machine file. `actions` is the registry of Rust action names for
/// this machine; an [`ActionId`] is an index into it.
pub fn parse_machine(src: &str, file: &str, actions: &[&str]) -> Result<Machine, ProtocolError> {
    let mut b = Builder::new(src, file, actions, false);
    b.run(None)?;
    b.finish()
}

/// Syntax and name checks only (no completeness check), for `moped protocol lint`.
/// Accepts the same files as [`parse_machine`].
pub fn lint(src: &str, file: &str, actions: &[&str]) -> Result<(), ProtocolError> {
    Builder::new(src, file, actions, false).run(None)
}

/// Applies an overlay file to an already loaded machine and checks the merged
/// table for completeness. `actions` is the registry for the merged machine: it
/// must contain every action the base machine uses (they are resolved again by name).
pub fn apply_overlay(
    base: &Machine,
    src: &str,
    file: &str,
    actions: &[&str],
) -> Result<Machine, ProtocolError> {
    let mut b = Builder::new(src, file, actions, true);
    b.load_base(base)?;
    b.run(Some(base.name()))?;
    b.finish()
}
