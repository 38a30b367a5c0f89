//! One JSON event line (`kflame collapse --events-json`, `kflame record`'s `.json`) read in
//! place: keys in any order, unknown keys skipped, strings borrowed from the line unless
//! they hold escapes, and the stack handed frame by frame to a callback instead of being
//! collected (the page builder interns each frame as it comes).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The fields of one event line the scatter page uses.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct LineFields<'a> {
    /// Start, ns of the producer's clock (from `ts`, seconds with up to 9 decimals).
    pub(crate) ts_ns: Option<i64>,
    /// `duration_ns`.
    pub(crate) duration_ns: Option<u64>,
    /// `cpu`.
    pub(crate) cpu: Option<u32>,
    /// `pid`.
    pub(crate) pid: Option<u32>,
    /// `tid` (not written by kflame's producers; read when present).
    pub(crate) tid: Option<u32>,
    /// `comm`.
    pub(crate) comm: Option<Cow<'a, str>>,
    /// `event`.
    pub(crate) event: Option<Cow<'a, str>>,
    /// Whether a `stack` key was present (and not `null`).
    pub(crate) has_stack: bool,
}

/// Parses `line`; each frame of `stack` goes to `frame`, root first. The error says what
/// was expected, with serde_json's column.
pub(crate) fn parse_line<'a>(
    line: &'a str,
    frame: &mut dyn FnMut(Cow<'a, str>),
) -> Result<LineFields<'a>, String> {
    let mut de = serde_json::Deserializer::from_str(line);
    let fields = de.deserialize_map(LineVisitor { frame }).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(fields)
}

struct LineVisitor<'f, 'a> {
    frame: &'f mut dyn FnMut(Cow<'a, str>),
}

impl<'de> Visitor<'de> for LineVisitor<'_, 'de> {
    type Value = LineFields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event object {\"ts\":…,\"duration_ns\":…,\"stack\":[…],…}")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut out = LineFields::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "ts" => out.ts_ns = map.next_value::<Option<f64>>()?.map(seconds_to_ns).transpose()?,
                "duration_ns" => out.duration_ns = map.next_value()?,
                "cpu" => out.cpu = map.next_value()?,
                "pid" => out.pid = map.next_value()?,
                "tid" => out.tid = map.next_value()?,
                "comm" => out.comm = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "event" => out.event = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "stack" => out.has_stack = map.next_value_seed(StackSeed { frame: &mut *self.frame })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// Seconds as ns, rounded: exact for the 9 decimals the producers write while the time is
/// below 2^53 ns / 10 (about 10 days of uptime at full precision; beyond, within 1 µs).
fn seconds_to_ns<E: de::Error>(s: f64) -> Result<i64, E> {
    let ns = (s * 1e9).round();
    if ns.is_finite() && ns.abs() < 9.2e18 {
        Ok(ns as i64)
    } else {
        Err(E::custom(format!("`ts` {s} is not a time in seconds")))
    }
}

/// A string, borrowed when it has no escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Str(Cow::Owned(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Str(Cow::Owned(v)))
    }
}

/// `stack`: `null` or an array of strings, each handed to the callback.
struct StackSeed<'f, 'a> {
    frame: &'f mut dyn FnMut(Cow<'a, str>),
}

impl<'de> DeserializeSeed<'de> for StackSeed<'_, 'de> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for StackSeed<'_, 'de> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`stack` as an array of frame names, root first")
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<bool, S::Error> {
        while let Some(s) = seq.next_element::<Str<'de>>()? {
            (self.frame)(s.0);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<(LineFields<'_>, Vec<String>), String> {
        let mut frames = Vec::new();
        let f = parse_line(line, &mut |s| frames.push(s.into_owned()))?;
        Ok((f, frames))
    }

    #[test]
    fn reads_a_record_line_exactly() {
        let (f, frames) = parse(
            "{\"ts\":23405.213860545,\"cpu\":1,\"pid\":25977,\"comm\":\"sh\",\"duration_ns\":14417,\
             \"stack\":[\"brk\",\"sh\"],\"event\":\"raw_syscalls:sys_enter,sys_exit\",\"weight\":14417}",
        )
        .unwrap();
        assert_eq!(f.ts_ns, Some(23_405_213_860_545));
        assert_eq!((f.cpu, f.pid, f.tid, f.duration_ns), (Some(1), Some(25977), None, Some(14417)));
        assert_eq!(f.comm.as_deref(), Some("sh"));
        assert_eq!(f.event.as_deref(), Some("raw_syscalls:sys_enter,sys_exit"));
        assert!(f.has_stack);
        assert_eq!(frames, ["brk", "sh"]);
    }

    #[test]
    fn any_order_nulls_escapes_and_unknown_keys() {
        let (f, frames) =
            parse(r#"{"x":{"y":[1,2]},"stack":["a\"b","\u00e9"],"comm":null,"ts":null,"tid":7}"#).unwrap();
        assert_eq!(frames, ["a\"b", "é"]);
        assert_eq!((f.ts_ns, f.comm, f.tid), (None, None, Some(7)));
        let (f, frames) = parse(r#"{"stack":null}"#).unwrap();
        assert!(!f.has_stack && frames.is_empty());
    }

    #[test]
    fn errors_say_what_was_expected() {
        assert!(parse("{\"ts\":1").unwrap_err().contains("EOF"));
        assert!(parse("[1]").unwrap_err().contains("event object"));
        assert!(parse("{\"stack\":\"a\"}").unwrap_err().contains("array of frame names"));
        assert!(parse("{\"pid\":-1}").is_err());
        assert!(parse("{} x").unwrap_err().contains("trailing"));
        assert!(parse("{\"ts\":1e300}").unwrap_err().contains("not a time"));
    }
}
