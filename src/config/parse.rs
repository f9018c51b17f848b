//! Reading the configuration's TOML text: one-line error messages, and the line and column
//! of the key an error names.

use super::{ConfigError, SystemConfig};

/// The one key of the table a TOML date-time is handed to serde as.
pub(super) const TOML_DATETIME_KEY: &str = "$__toml_private_datetime";

/// Make a deserializer message one line, and drop the backticks serde puts
/// around the expected field names of an unknown-field error so it reads
/// `unknown field `asoc`, expected one of size_bytes, assoc, latency`.
pub(super) fn tidy_message(msg: &str) -> String {
    let msg = msg.trim().replace("\r\n", "\n").replace('\n', "; ");
    // A TOML date-time reaches a section as a table of one private key: say what it is.
    if msg.starts_with(&format!("unknown field `{TOML_DATETIME_KEY}`")) {
        return "invalid type: date-time, expected a table".to_string();
    }
    if msg.starts_with("unknown field") {
        if let Some(p) = msg.find(", expected") {
            return format!("{}{}", &msg[..p], msg[p..].replace('`', ""));
        }
    }
    // serde names the Rust type (`expected u32`); say which integers the key takes.
    if let Some((head, ty)) = msg.rsplit_once(", expected ") {
        if let Some(range) = int_range(ty) {
            return match head.strip_prefix("invalid value: integer ") {
                Some(n) => format!("{} is out of range, expected {range}", n.trim_matches('`')),
                None => format!("{head}, expected {range}"),
            };
        }
    }
    msg
}

/// The integers a config field of Rust type `ty` takes, as words; TOML's integers are
/// 64-bit signed, which caps the unsigned 64-bit types.
pub(super) fn int_range(ty: &str) -> Option<String> {
    let (lo, hi): (i128, i128) = match ty {
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" | "usize" => (0, i64::MAX.into()),
        "i64" | "isize" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    };
    Some(format!("an integer from {lo} to {hi}"))
}

/// The error for a `--set` value that reads as an integer but that TOML cannot hold:
/// `value` is out of range for the key (whose Rust type a probe with -1 reveals).
pub(super) fn int_out_of_range(root: &toml::Value, key_path: &str, value: &str) -> ConfigError {
    fn slot<'a>(v: &'a mut toml::Value, segs: &[&str]) -> Option<&'a mut toml::Value> {
        match segs.split_first() {
            None => Some(v),
            Some((head, rest)) => slot(v.get_mut(*head)?, rest),
        }
    }
    let mut probe = root.clone();
    let segs: Vec<&str> = key_path.split('.').collect();
    if let Some(node) = slot(&mut probe, &segs) {
        *node = toml::Value::Integer(-1);
    }
    let ty = match serde_path_to_error::deserialize::<_, SystemConfig>(probe) {
        Ok(_) => "i64".to_string(),
        Err(e) => e
            .inner()
            .message()
            .rsplit_once(", expected ")
            .map_or(String::new(), |(_, t)| t.trim().to_string()),
    };
    let range = int_range(&ty).unwrap_or_else(|| int_range("i64").expect("known type"));
    ConfigError::key(
        key_path,
        format!("{value} is out of range, expected {range}"),
    )
}

/// Whether `value` is written as a TOML integer (sign, digits, `_`, `0x`/`0o`/`0b`).
pub(super) fn looks_like_integer(value: &str) -> bool {
    let v = value.trim().trim_start_matches(['+', '-']);
    let (digits, hex) = match ["0x", "0o", "0b"].iter().find_map(|p| v.strip_prefix(p)) {
        Some(d) => (d, true),
        None => (v, false),
    };
    !digits.is_empty()
        && digits
            .chars()
            .all(|c| c == '_' || c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()))
}

/// Fails if a section of `text` is written as something else than a table, e.g.
/// `l2 = [1024, 2, 99]`, which serde would otherwise read field by field.
pub(super) fn sections_are_tables(text: &str) -> Result<(), ConfigError> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        // Syntax errors are reported, with their position, by the typed parse.
        return Ok(());
    };
    let Ok(toml::Value::Table(known)) = toml::Value::try_from(SystemConfig::default()) else {
        return Ok(());
    };
    for (key, value) in &doc {
        if known.get(key).is_some_and(toml::Value::is_table) && !value.is_table() {
            return Err(ConfigError::key(
                key,
                format!(
                    "expected a table (`[{key}]` with one `name = value` a line, or \
                     `{key} = {{ name = value, ... }}`), found {} {}",
                    article(value.type_str()),
                    value.type_str()
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

pub(super) fn path_string(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut parts = Vec::new();
    for seg in path.iter() {
        match seg {
            Segment::Map { key } if key == TOML_DATETIME_KEY => {}
            Segment::Map { key } => parts.push(key.clone()),
            Segment::Seq { index } => parts.push(index.to_string()),
            Segment::Enum { variant } => parts.push(variant.clone()),
            Segment::Unknown => parts.push("?".to_string()),
        }
    }
    parts.join(".")
}

/// The dotted key a line defines, given the current table header, e.g.
/// `l2.assoc` for `assoc = 4` under `[l2]`. Best effort: handles bare and
/// simply quoted keys and dotted keys.
pub(super) fn parse_key(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for part in s.split('.') {
        let p = part.trim().trim_matches('"').trim_matches('\'');
        if p.is_empty() {
            return None;
        }
        out.push(p.to_string());
    }
    Some(out)
}

/// Find where `key_path` is defined in `text` (1-based line and column of
/// the key); falls back to the nearest enclosing key or table that is found.
pub(super) fn locate_key(text: &str, key_path: &str) -> Option<(u32, u32)> {
    let want: Vec<&str> = key_path.split('.').collect();
    let mut best: Option<(usize, (u32, u32))> = None;
    let mut table: Vec<String> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        let indent = raw.len() - trimmed.len();
        let col = raw[..indent].chars().count() as u32 + 1;
        let line = i as u32 + 1;
        let (full, at_col) = if let Some(rest) = trimmed.strip_prefix('[') {
            let inner = rest.trim_start_matches('[');
            let Some(end) = inner.find(']') else { continue };
            let Some(k) = parse_key(&inner[..end]) else {
                continue;
            };
            table = k.clone();
            (k, col)
        } else if let Some(eq) = trimmed.find('=') {
            if trimmed.starts_with('#') {
                continue;
            }
            let Some(k) = parse_key(&trimmed[..eq]) else {
                continue;
            };
            let mut full = table.clone();
            full.extend(k);
            (full, col)
        } else {
            continue;
        };
        let matched = full
            .iter()
            .zip(&want)
            .take_while(|(a, b)| a.as_str() == **b)
            .count();
        if matched == full.len() && matched > 0 && best.map_or(true, |(m, _)| matched > m) {
            best = Some((matched, (line, at_col)));
        }
    }
    best.map(|(_, lc)| lc)
}
