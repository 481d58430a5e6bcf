//! Sprig's date functions over a fixed clock. `now` is always [`FIXED_NOW`] (UTC), so a
//! render never depends on when it runs; `date` formats with Go's reference layout.

use super::conv::{s, to_i64};
use super::want;
use crate::helm::template::exec::Funcs;
use crate::helm::template::value::{Cx, Object, Value};
use std::rc::Rc;

/// The instant `now` returns: 2000-01-01T00:00:00Z (documented in docs/helm.md).
pub const FIXED_NOW: i64 = 946_684_800;

/// A Go `time.Time` in UTC, seconds since the epoch.
pub struct Time(pub i64);

impl Object for Time {
    fn type_name(&self) -> &str {
        "time.Time"
    }
    fn field(&self, name: &str) -> Option<Value> {
        let (y, mo, d, h, mi, se) = civil(self.0);
        Some(match name {
            "Year" => Value::Int(y),
            "Month" => Value::Int(mo),
            "Day" => Value::Int(d),
            "Hour" => Value::Int(h),
            "Minute" => Value::Int(mi),
            "Second" => Value::Int(se),
            "Unix" => Value::Int(self.0),
            _ => return None,
        })
    }
    fn call(&self, _: &Cx, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        match name {
            "Format" => Some(Ok(Value::from(format(
                self.0,
                &args.first().map(s).unwrap_or_default(),
            )))),
            "UTC" | "Local" => Some(Ok(Value::Object(Rc::new(Time(self.0))))),
            _ => None,
        }
    }
    fn display(&self) -> String {
        format(self.0, "2006-01-02 15:04:05.999999999 -0700 MST")
    }
}

/// (year, month, day, hour, minute, second) of a Unix time (proleptic Gregorian, UTC).
fn civil(t: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 { y + 1 } else { y },
        m,
        d,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60,
    )
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
];

/// Go's `Time.Format` for UTC times.
pub fn format(t: i64, layout: &str) -> String {
    let (y, mo, d, h, mi, se) = civil(t);
    let wd = DAYS[t.div_euclid(86_400).rem_euclid(7) as usize];
    let month = MONTHS[(mo - 1) as usize];
    let mut out = String::new();
    let mut rest = layout;
    let tokens: [(&str, String); 27] = [
        ("January", month.to_string()),
        ("Jan", month[..3].to_string()),
        ("Monday", wd.to_string()),
        ("Mon", wd[..3].to_string()),
        ("2006", format!("{y:04}")),
        ("-0700", "+0000".into()),
        ("-07:00", "+00:00".into()),
        ("Z07:00", "Z".into()),
        ("Z0700", "Z".into()),
        ("MST", "UTC".into()),
        (".000000000", ".000000000".into()),
        (".999999999", String::new()),
        (".000000", ".000000".into()),
        (".999999", String::new()),
        (".000", ".000".into()),
        (".999", String::new()),
        ("01", format!("{mo:02}")),
        ("02", format!("{d:02}")),
        ("_2", format!("{d:>2}")),
        ("15", format!("{h:02}")),
        (
            "03",
            format!("{:02}", if h % 12 == 0 { 12 } else { h % 12 }),
        ),
        ("04", format!("{mi:02}")),
        ("05", format!("{se:02}")),
        ("06", format!("{:02}", y % 100)),
        ("PM", if h >= 12 { "PM".into() } else { "AM".into() }),
        ("pm", if h >= 12 { "pm".into() } else { "am".into() }),
        ("002", format!("{:03}", 0)),
    ];
    'outer: while !rest.is_empty() {
        for (tok, val) in &tokens {
            if let Some(r) = rest.strip_prefix(tok) {
                out.push_str(val);
                rest = r;
                continue 'outer;
            }
        }
        let single: [(&str, String); 4] = [
            ("1", mo.to_string()),
            ("2", d.to_string()),
            ("3", (if h % 12 == 0 { 12 } else { h % 12 }).to_string()),
            ("4", mi.to_string()),
        ];
        for (tok, val) in &single {
            if let Some(r) = rest.strip_prefix(tok) {
                out.push_str(val);
                rest = r;
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn time_arg(v: &Value) -> i64 {
    match v {
        Value::Object(o) if o.type_name() == "time.Time" => {
            o.field("Unix").map(|u| to_i64(&u)).unwrap_or(FIXED_NOW)
        }
        Value::Int(_) | Value::Float(_) => to_i64(v),
        _ => FIXED_NOW,
    }
}

fn time_value(t: i64) -> Value {
    Value::Object(Rc::new(Time(t)))
}

pub fn register(f: &mut Funcs) {
    f.add("now", |_, _| Ok(time_value(FIXED_NOW)));
    f.add("date", |_, a| {
        want(a, 2, "date")?;
        Ok(Value::from(format(time_arg(&a[1]), &s(&a[0]))))
    });
    f.add("dateInZone", |_, a| {
        want(a, 3, "dateInZone")?;
        Ok(Value::from(format(time_arg(&a[1]), &s(&a[0]))))
    });
    f.add("htmlDate", |_, a| {
        want(a, 1, "htmlDate")?;
        Ok(Value::from(format(time_arg(&a[0]), "2006-01-02")))
    });
    f.add("htmlDateInZone", |_, a| {
        want(a, 2, "htmlDateInZone")?;
        Ok(Value::from(format(time_arg(&a[0]), "2006-01-02")))
    });
    f.add("unixEpoch", |_, a| {
        want(a, 1, "unixEpoch")?;
        Ok(Value::from(time_arg(&a[0]).to_string()))
    });
    f.add("dateModify", |_, a| {
        want(a, 2, "dateModify")?;
        Ok(time_value(
            time_arg(&a[1]) + parse_duration(&s(&a[0])).unwrap_or(0),
        ))
    });
    f.add("mustDateModify", |_, a| {
        want(a, 2, "mustDateModify")?;
        let d = parse_duration(&s(&a[0])).ok_or("invalid duration")?;
        Ok(time_value(time_arg(&a[1]) + d))
    });
    f.add("ago", |_, a| {
        want(a, 1, "ago")?;
        Ok(Value::from(format!("{}s", FIXED_NOW - time_arg(&a[0]))))
    });
    f.add("duration", |_, a| {
        want(a, 1, "duration")?;
        Ok(Value::from(format!("{}s", to_i64(&a[0]))))
    });
    f.add("durationRound", |_, a| {
        want(a, 1, "durationRound")?;
        Ok(Value::from(s(&a[0])))
    });
    f.add("toDate", |_, a| {
        want(a, 2, "toDate")?;
        Ok(time_value(FIXED_NOW))
    });
    f.add("mustToDate", |_, a| {
        want(a, 2, "mustToDate")?;
        Ok(time_value(FIXED_NOW))
    });
}

/// Go's `time.ParseDuration` to whole seconds (`1h30m`, `-24h`, `90s`).
fn parse_duration(t: &str) -> Option<i64> {
    let (neg, mut rest) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let mut total = 0f64;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..u] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += num * mult;
        rest = &rest[u..];
    }
    Some(if neg { -total as i64 } else { total as i64 })
}

#[cfg(test)]
mod tests {
    #[test]
    fn go_layouts() {
        assert_eq!(
            super::format(super::FIXED_NOW, "2006-01-02T15:04:05Z07:00"),
            "2000-01-01T00:00:00Z"
        );
        assert_eq!(
            super::format(
                super::FIXED_NOW + 86_400 * 31 + 3661,
                "Jan 2 Mon 03:04:05 PM"
            ),
            "Feb 1 Tue 01:01:01 AM"
        );
    }
}
