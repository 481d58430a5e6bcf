//! Sprig's date functions over a fixed clock. `now` is the instant the render is given
//! (default [`FIXED_NOW`], UTC; `kiln helm template --now`, or `SOURCE_DATE_EPOCH`, read by
//! the CLI), never the machine's clock, so a render never depends on when it runs; `date`
//! formats with Go's reference layout.

use crate::template::exec::Funcs;
use crate::template::fmt::{s, to_i64};
use crate::template::value::{Cx, Marshaled, Object, Value};
use std::rc::Rc;

/// The instant `now` returns unless the render is given another: 2000-01-01T00:00:00Z
/// (documented in docs/helm.md).
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
    fn arity(&self, name: &str) -> Option<usize> {
        match name {
            "Format" => Some(1),
            "UTC" | "Local" => Some(0),
            _ => None,
        }
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
    /// `Time.MarshalJSON`: RFC 3339 with nanoseconds (kiln's times are whole seconds);
    /// a year outside 0..=9999 is Go's marshalling error, which leaves the text.
    fn marshal(&self) -> Option<Marshaled> {
        let year = civil(self.0).0;
        (0..=9999).contains(&year).then(|| {
            Marshaled::Value(Value::from(format(
                self.0,
                "2006-01-02T15:04:05.999999999Z07:00",
            )))
        })
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
    format_in(t, layout, &Zone::utc())
}

/// A time zone at one instant: its offset east of UTC in seconds and its abbreviation, as
/// Go's `Time.Zone` gives them.
pub struct Zone {
    offset: i64,
    abbreviation: String,
}

impl Zone {
    fn utc() -> Zone {
        Zone {
            offset: 0,
            abbreviation: "UTC".into(),
        }
    }

    /// Sprig's `dateInZone` zone (date.go): `time.LoadLocation(name)`, UTC when that fails.
    /// Zones come from the IANA database bundled in kiln (jiff's), never the machine's, so
    /// a render does not depend on where it runs; `Local` is therefore UTC. Go reads the
    /// name case-sensitively, as from the file system: `asia/tokyo` is no zone.
    fn at(name: &str, t: i64) -> Zone {
        use std::sync::OnceLock;
        static DB: OnceLock<jiff::tz::TimeZoneDatabase> = OnceLock::new();
        if matches!(name, "" | "UTC" | "Local") {
            return Zone::utc();
        }
        let db = DB.get_or_init(jiff::tz::TimeZoneDatabase::bundled);
        let (Ok(tz), Ok(ts)) = (db.get(name), jiff::Timestamp::from_second(t)) else {
            return Zone::utc();
        };
        if tz.iana_name() != Some(name) {
            return Zone::utc();
        }
        let info = tz.to_offset_info(ts);
        Zone {
            offset: i64::from(info.offset().seconds()),
            abbreviation: info.abbreviation().to_string(),
        }
    }

    /// Go's numeric zone forms: `-0700`/`-07:00`/`-07` (`colon`, `minutes`), and `Z` for
    /// UTC in the `Z07…` forms (`z`).
    fn numeric(&self, z: bool, colon: bool, minutes: bool) -> String {
        if z && self.offset == 0 {
            return "Z".into();
        }
        let sign = if self.offset < 0 { '-' } else { '+' };
        let m = self.offset.abs() / 60;
        let (hh, mm) = (m / 60, m % 60);
        match (minutes, colon) {
            (false, _) => format!("{sign}{hh:02}"),
            (true, true) => format!("{sign}{hh:02}:{mm:02}"),
            (true, false) => format!("{sign}{hh:02}{mm:02}"),
        }
    }
}

/// Go's `Time.Format` in `zone`.
fn format_in(utc: i64, layout: &str, zone: &Zone) -> String {
    let t = utc + zone.offset;
    let (y, mo, d, h, mi, se) = civil(t);
    let wd = DAYS[t.div_euclid(86_400).rem_euclid(7) as usize];
    let month = MONTHS[(mo - 1) as usize];
    let mut out = String::new();
    let mut rest = layout;
    let yday = t.div_euclid(86_400) - days_from_civil(y, 1, 1) + 1;
    let tokens: [(&str, String); 30] = [
        ("January", month.to_string()),
        ("Jan", month[..3].to_string()),
        ("Monday", wd.to_string()),
        ("Mon", wd[..3].to_string()),
        ("2006", format!("{y:04}")),
        ("-0700", zone.numeric(false, false, true)),
        ("-07:00", zone.numeric(false, true, true)),
        ("Z07:00", zone.numeric(true, true, true)),
        ("Z0700", zone.numeric(true, false, true)),
        ("-07", zone.numeric(false, false, false)),
        ("Z07", zone.numeric(true, false, false)),
        // Go prints the numeric offset for a zone without an abbreviation.
        (
            "MST",
            if zone.abbreviation.is_empty() {
                zone.numeric(false, false, true)
            } else {
                zone.abbreviation.clone()
            },
        ),
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
        ("002", format!("{yday:03}")),
        ("__2", format!("{yday:>3}")),
    ];
    'outer: while !rest.is_empty() {
        for (tok, val) in &tokens {
            if let Some(r) = rest.strip_prefix(tok) {
                out.push_str(val);
                rest = r;
                continue 'outer;
            }
        }
        let single: [(&str, String); 5] = [
            ("1", mo.to_string()),
            ("2", d.to_string()),
            ("3", (if h % 12 == 0 { 12 } else { h % 12 }).to_string()),
            ("4", mi.to_string()),
            ("5", se.to_string()),
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

/// Days from 1970-01-01 to a proleptic Gregorian date (the inverse of [`civil`]'s days).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Go's zero `time.Time` (0001-01-01 00:00:00 UTC), what `toDate` gives for text it cannot
/// read.
const ZERO_TIME: i64 = -62_135_596_800;

/// Go's `time.ParseInLocation(layout, value, UTC)` to Unix seconds (Sprig's `toDate`; the
/// fraction of a second is read and dropped, as kiln's times are whole seconds). The
/// layout's elements are `format`'s; a zone abbreviation reads as UTC, as Go reads one it
/// does not know. Errors are Go's text.
pub fn parse(layout: &str, value: &str) -> Result<i64, String> {
    let quote = |t: &str| crate::template::fmt::go_quote(t);
    let bad = |rest: &str, elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(rest),
            quote(elem)
        )
    };
    let range = |what: &str| format!("parsing time {}: {what} out of range", quote(value));
    // Up to `max` digits (at least `min`).
    fn digits(v: &str, min: usize, max: usize) -> Option<(i64, &str)> {
        let n = v.bytes().take(max).take_while(u8::is_ascii_digit).count();
        if n < min {
            return None;
        }
        Some((v[..n].parse().ok()?, &v[n..]))
    }
    fn name<'v>(v: &'v str, names: &[&str], short: bool) -> Option<(i64, &'v str)> {
        names.iter().enumerate().find_map(|(i, n)| {
            let n = if short { &n[..3] } else { n };
            let head = v.get(..n.len())?;
            head.eq_ignore_ascii_case(n)
                .then(|| (i as i64, &v[n.len()..]))
        })
    }
    // Go: a layout without a year reads year 0.
    let (mut y, mut mo, mut d, mut h, mut mi, mut se) = (0i64, 1i64, 1i64, 0i64, 0i64, 0i64);
    let (mut yday, mut pm, mut offset) = (None, None, 0i64);
    let mut rest = value;
    let mut lay = layout;
    const ELEMENTS: [&str; 34] = [
        "January",
        "Jan",
        "Monday",
        "Mon",
        "2006",
        "-07:00",
        "-0700",
        "-07",
        "Z07:00",
        "Z0700",
        "Z07",
        "MST",
        ".000000000",
        ".999999999",
        ".000000",
        ".999999",
        ".000",
        ".999",
        "002",
        "__2",
        "01",
        "02",
        "_2",
        "15",
        "03",
        "04",
        "05",
        "06",
        "PM",
        "pm",
        "1",
        "2",
        "3",
        "4",
    ];
    while !lay.is_empty() {
        let elem = ELEMENTS
            .iter()
            .find(|e| lay.starts_with(**e))
            .copied()
            .or_else(|| lay.starts_with('5').then_some("5"));
        let Some(elem) = elem else {
            // A literal: the value must have it.
            let c = lay.chars().next().unwrap_or(' ');
            let Some(r) = rest.strip_prefix(c) else {
                return Err(bad(rest, lay));
            };
            rest = r;
            lay = &lay[c.len_utf8()..];
            continue;
        };
        lay = &lay[elem.len()..];
        let read = match elem {
            "January" => name(rest, &MONTHS, false).map(|(i, r)| (i + 1, r)),
            "Jan" => name(rest, &MONTHS, true).map(|(i, r)| (i + 1, r)),
            "Monday" => name(rest, &DAYS, false),
            "Mon" => name(rest, &DAYS, true),
            "2006" => digits(rest, 4, 4),
            "06" => digits(rest, 2, 2).map(|(n, r)| (if n >= 69 { 1900 + n } else { 2000 + n }, r)),
            "01" | "02" | "03" | "04" | "05" => digits(rest, 2, 2),
            "1" | "2" | "3" | "4" | "5" | "15" => digits(rest, 1, 2),
            "_2" => digits(rest.strip_prefix(' ').unwrap_or(rest), 1, 2),
            "002" => digits(rest, 3, 3),
            "__2" => digits(rest.trim_start_matches(' '), 1, 3),
            "PM" | "pm" => match rest.get(..2).map(str::to_ascii_uppercase).as_deref() {
                Some("PM") => Some((1, &rest[2..])),
                Some("AM") => Some((0, &rest[2..])),
                _ => None,
            },
            "MST" => {
                let n = rest.bytes().take_while(u8::is_ascii_uppercase).count();
                (n >= 3).then(|| (0, &rest[n..]))
            }
            z if z.starts_with('Z') && rest.starts_with('Z') => Some((0, &rest[1..])),
            zone if zone.starts_with(['-', 'Z']) => {
                let sign = match rest.as_bytes().first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return Err(bad(rest, elem)),
                };
                let colon = zone.contains(':');
                let (hh, r) = digits(&rest[1..], 2, 2).ok_or_else(|| bad(rest, elem))?;
                let (mm, r) = if zone.ends_with("07") {
                    (0, r)
                } else {
                    let r = if colon {
                        r.strip_prefix(':').ok_or_else(|| bad(rest, elem))?
                    } else {
                        r
                    };
                    digits(r, 2, 2).ok_or_else(|| bad(rest, elem))?
                };
                Some((sign * (hh * 3600 + mm * 60), r))
            }
            // A fraction of a second: its digits, dropped.
            frac => {
                let r = rest.strip_prefix('.').ok_or_else(|| bad(rest, frac))?;
                let n = r.bytes().take_while(u8::is_ascii_digit).count();
                if frac.contains('0') && n != frac.len() - 1 {
                    return Err(bad(rest, frac));
                }
                Some((0, &r[n..]))
            }
        };
        let Some((n, r)) = read else {
            return Err(bad(rest, elem));
        };
        match elem {
            "January" | "Jan" | "01" | "1" => mo = n,
            "2006" | "06" => y = n,
            "02" | "_2" | "2" => d = n,
            "002" | "__2" => yday = Some(n),
            "15" | "03" | "3" => h = n,
            "04" | "4" => mi = n,
            "05" | "5" => {
                se = n;
                // Go reads a fraction after the seconds the layout does not have.
                if !lay.starts_with('.') && r.starts_with('.') {
                    let f = r[1..].bytes().take_while(u8::is_ascii_digit).count();
                    if f > 0 {
                        rest = &r[1 + f..];
                        continue;
                    }
                }
            }
            "PM" | "pm" => pm = Some(n == 1),
            e if e.starts_with(['-', 'Z']) => offset = n,
            _ => {}
        }
        rest = r;
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            quote(value),
            quote(rest)
        ));
    }
    if let Some(pm) = pm {
        if !(1..=12).contains(&h) {
            return Err(range("hour"));
        }
        h = h % 12 + if pm { 12 } else { 0 };
    }
    if !(1..=12).contains(&mo) {
        return Err(range("month"));
    }
    if h > 23 {
        return Err(range("hour"));
    }
    if mi > 59 {
        return Err(range("minute"));
    }
    if se > 59 {
        return Err(range("second"));
    }
    let month_days = days_from_civil(y + mo / 12, mo % 12 + 1, 1) - days_from_civil(y, mo, 1);
    let days = match yday {
        Some(n) => days_from_civil(y, 1, 1) + n - 1,
        None => {
            if d < 1 || d > month_days {
                return Err(range("day"));
            }
            days_from_civil(y, mo, d)
        }
    };
    Ok(days * 86_400 + h * 3600 + mi * 60 + se - offset)
}

/// A date argument in seconds; anything else is `time.Now()` in Sprig, `now` here.
fn time_arg(v: &Value, now: i64) -> i64 {
    match v {
        Value::Object(o) if o.type_name() == "time.Time" => {
            o.field("Unix").map(|u| to_i64(&u)).unwrap_or(now)
        }
        Value::Int(_) | Value::Float(_) => to_i64(v),
        _ => now,
    }
}

fn time_value(t: i64) -> Value {
    Value::Object(Rc::new(Time(t)))
}

/// Registers the date functions on `f`, with `now` (seconds since the epoch) as the clock.
pub fn register(f: &mut Funcs, now: i64) {
    f.add("now", move |_, _| Ok(time_value(now)));
    f.add2("date", move |_, a0, a1| {
        Ok(Value::from(format(time_arg(a1, now), &s(a0))))
    });
    for name in ["dateInZone", "date_in_zone"] {
        f.add3(name, move |_, a0, a1, zone| {
            let t = time_arg(a1, now);
            Ok(Value::from(format_in(t, &s(a0), &Zone::at(&s(zone), t))))
        });
    }
    f.add1("htmlDate", move |_, a0| {
        Ok(Value::from(format(time_arg(a0, now), "2006-01-02")))
    });
    f.add2("htmlDateInZone", move |_, a0, zone| {
        let t = time_arg(a0, now);
        Ok(Value::from(format_in(
            t,
            "2006-01-02",
            &Zone::at(&s(zone), t),
        )))
    });
    f.add1("unixEpoch", move |_, a0| {
        Ok(Value::from(time_arg(a0, now).to_string()))
    });
    // Sprig registers these under their snake_case names too (functions.go `genericMap`).
    // `dateModify` keeps the date when `time.ParseDuration` fails; `mustDateModify` fails
    // with its error (`time: unknown unit "x" in duration "1x"`).
    for name in ["dateModify", "date_modify"] {
        f.add2(name, move |_, a0, a1| {
            let t = time_arg(a1, now);
            Ok(time_value(match parse_go_duration(&s(a0)) {
                Ok(ns) => add_seconds(t, ns),
                Err(_) => t,
            }))
        });
    }
    for name in ["mustDateModify", "must_date_modify"] {
        f.add2(name, move |_, a0, a1| {
            let ns = parse_go_duration(&s(a0))?;
            Ok(time_value(add_seconds(time_arg(a1, now), ns)))
        });
    }
    f.add1("ago", move |_, a0| {
        Ok(Value::from(format!("{}s", now - time_arg(a0, now))))
    });
    // Sprig's duration: seconds from a decimal string or an integer (a float64, every number
    // of a values file, is 0), printed as Go's Duration.String.
    f.add1("duration", move |_, a0| {
        let n = match a0 {
            Value::Str(t) => t.parse().unwrap_or(0),
            Value::Int(n) => *n,
            _ => 0,
        };
        Ok(Value::from(go_duration(n)))
    });
    f.add1("durationRound", move |_, a0| {
        Ok(Value::from(duration_round(a0, now)))
    });
    // toDate gives Go's zero time for text it cannot read; mustToDate the error.
    f.add2("toDate", move |_, a0, a1| {
        Ok(time_value(parse(&s(a0), &s(a1)).unwrap_or(ZERO_TIME)))
    });
    f.add2("mustToDate", move |_, a0, a1| {
        parse(&s(a0), &s(a1)).map(time_value)
    });
}

/// Go's `Duration.String` of whole seconds: `1m30s`, `24h0m0s`, `0s`.
fn go_duration(secs: i64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let sign = if secs < 0 { "-" } else { "" };
    let n = secs.unsigned_abs();
    let (h, m, s) = (n / 3600, n % 3600 / 60, n % 60);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}

/// `t + d` for a duration in nanoseconds: kiln's times are whole seconds (DIVERGENCES.md), so
/// the sub-second part is dropped (toward zero); a sum past kiln's range stays at its end.
fn add_seconds(t: i64, ns: i64) -> i64 {
    t.saturating_add(ns / 1_000_000_000)
}

/// Go's `time.ParseDuration` (go/src/time/format.go), in seconds; `None` where Go fails.
pub fn parse_duration_f64(t: &str) -> Option<f64> {
    parse_go_duration(t).ok().map(|ns| ns as f64 / 1e9)
}

/// Go's `time.ParseDuration` (go/src/time/format.go `ParseDuration`), step for step: a
/// duration in nanoseconds, or Go's error text (`time: invalid duration "x"`, `time: missing
/// unit in duration "1"`, `time: unknown unit "x" in duration "1x"`), overflow included.
pub fn parse_go_duration(orig: &str) -> Result<i64, String> {
    const MAX: u64 = 1 << 63;
    let invalid = || format!("time: invalid duration {}", go_time_quote(orig));
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    // Special case: if all that is left is "0", this is zero.
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        // The next character must be [0-9.].
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // Consume [0-9]* (`leadingInt`, which fails past 1<<63).
        let before = s.len();
        let mut v: u64 = 0;
        while let Some(&c) = s.first().filter(|c| c.is_ascii_digit()) {
            if v > MAX / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(c - b'0');
            if v > MAX {
                return Err(invalid());
            }
            s = &s[1..];
        }
        let pre = before != s.len();
        // Consume (\.[0-9]*)? (`leadingFraction`: past 1<<63 it stops adding precision).
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let before = s.len();
            let mut overflow = false;
            while let Some(&c) = s.first().filter(|c| c.is_ascii_digit()) {
                s = &s[1..];
                if overflow {
                    continue;
                }
                if f > (MAX - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + u64::from(c - b'0');
                if y > MAX {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = before != s.len();
        }
        if !pre && !post {
            // No digits (".s", "-.s").
            return Err(invalid());
        }
        // Consume the unit: everything up to the next [0-9.].
        let i = s
            .iter()
            .position(|&c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if i == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                go_time_quote(orig)
            ));
        }
        let (u, rest) = s.split_at(i);
        s = rest;
        let unit: u64 = match u {
            b"ns" => 1,
            // "µs" (U+00B5, the micro sign) and "μs" (U+03BC, Greek mu) too.
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_time_quote(&String::from_utf8_lossy(u)),
                    go_time_quote(orig)
                ));
            }
        };
        if v > MAX / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            // float64 is needed to be nanosecond accurate for fractions of hours.
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > MAX {
                return Err(invalid());
            }
        }
        d += v;
        if d > MAX {
            return Err(invalid());
        }
    }
    if neg {
        // -(1<<63) is i64::MIN, which Go accepts.
        return Ok((d as i64).wrapping_neg());
    }
    i64::try_from(d).map_err(|_| invalid())
}

/// The `time` package's own `quote` (go/src/time/format.go): `strconv.Quote`'s quotes and
/// backslashes, but every byte of a control or non-ASCII character as `\xNN`.
fn go_time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Sprig's `durationRound`: the largest unit the duration exceeds, whole, without a sign
/// (`2h10m5s` is `2h`, `36h` `1d`, `800h` `1mo`); a string by `time.ParseDuration`, an
/// integer as nanoseconds, a time as the time since `now`, anything else 0.
fn duration_round(v: &Value, now: i64) -> String {
    let nanos: u128 = match v {
        Value::Str(t) => parse_go_duration(t).map_or(0, |ns| u128::from(ns.unsigned_abs())),
        Value::Int(n) => u128::from(n.unsigned_abs()),
        Value::Object(o) if o.type_name() == "time.Time" => {
            u128::from((now - time_arg(v, now)).unsigned_abs()) * 1_000_000_000
        }
        _ => 0,
    };
    const S: u128 = 1_000_000_000;
    for (unit, name) in [
        (S * 3600 * 24 * 365, "y"),
        (S * 3600 * 24 * 30, "mo"),
        (S * 3600 * 24, "d"),
        (S * 3600, "h"),
        (S * 60, "m"),
        (S, "s"),
    ] {
        if nanos > unit {
            return format!("{}{name}", nanos / unit);
        }
    }
    "0s".into()
}

#[cfg(test)]
mod tests {
    /// Go's `time.ParseDuration`, as Helm v4.2.3's `mustDateModify` gives it (each checked
    /// live: the date it moves, or the error after `error calling mustDateModify: `).
    #[test]
    fn durations_parse_and_fail_as_go_parses_them() {
        let ok = |t: &str, ns: i64| assert_eq!(super::parse_go_duration(t), Ok(ns), "{t:?}");
        ok("0", 0);
        ok("-0", 0);
        ok("+0", 0);
        ok("-.5h", -1_800_000_000_000);
        ok("1.h", 3_600_000_000_000);
        ok("5m30.5s", 330_500_000_000);
        ok("-1.5h", -5_400_000_000_000);
        ok("1µs", 1_000);
        ok("1μs", 1_000);
        ok("0.0000000001s", 0);
        ok("1.00000000000000000000001h", 3_600_000_000_000);
        ok("9223372036854775807ns", i64::MAX);
        ok("2562047h47m16.854775807s", i64::MAX);
        ok("-9223372036854775808ns", i64::MIN);
        let err = |t: &str, want: &str| {
            assert_eq!(super::parse_go_duration(t), Err(want.to_string()), "{t:?}")
        };
        err("1.5x", r#"time: unknown unit "x" in duration "1.5x""#);
        err("x", r#"time: invalid duration "x""#);
        err("", r#"time: invalid duration """#);
        err("-", r#"time: invalid duration "-""#);
        err("+", r#"time: invalid duration "+""#);
        err(".s", r#"time: invalid duration ".s""#);
        err("1", r#"time: missing unit in duration "1""#);
        err("00", r#"time: missing unit in duration "00""#);
        err("1h1", r#"time: missing unit in duration "1h1""#);
        err("1d", r#"time: unknown unit "d" in duration "1d""#);
        err("1h-1m", r#"time: unknown unit "h-" in duration "1h-1m""#);
        err("1 h", r#"time: unknown unit " h" in duration "1 h""#);
        err("1h\t", r#"time: unknown unit "h\x09" in duration "1h\x09""#);
        err(
            "3é",
            r#"time: unknown unit "\xc3\xa9" in duration "3\xc3\xa9""#,
        );
        err("1\"x", r#"time: unknown unit "\"x" in duration "1\"x""#);
        err("a\\b", r#"time: invalid duration "a\\b""#);
        let overflow = ["99999999999999999999h", "9223372036854775808ns", "2562048h"];
        for t in overflow {
            err(t, &format!("time: invalid duration \"{t}\""));
        }
    }

    #[test]
    fn dates_are_read_by_their_layout() {
        // Helm v4.2.3's `toDate L V | unixEpoch`.
        assert_eq!(super::parse("2006-01-02", "2021-03-04"), Ok(1_614_816_000));
        assert_eq!(
            super::parse("2006-01-02T15:04:05Z07:00", "2021-03-04T05:06:07+02:00"),
            Ok(1_614_827_167)
        );
        assert_eq!(
            super::parse("Jan 2, 2006 3:04 PM MST", "Mar 4, 2021 5:06 PM UTC"),
            Ok(1_614_877_560)
        );
        assert_eq!(
            super::parse("15:04:05", "10:00:00.123"),
            Ok(-62_167_183_200)
        );
        assert_eq!(
            super::parse("2006-01-02", "x"),
            Err(r#"parsing time "x" as "2006-01-02": cannot parse "x" as "2006""#.into())
        );
        assert_eq!(
            super::parse("2006-01-02", "2021-02-30"),
            Err(r#"parsing time "2021-02-30": day out of range"#.into())
        );
        assert_eq!(
            super::parse("2006-01-02", "2021-03-04x"),
            Err(r#"parsing time "2021-03-04x": extra text: "x""#.into())
        );
        assert_eq!(
            super::format(super::ZERO_TIME, "2006-01-02 15:04"),
            "0001-01-01 00:00"
        );
        assert_eq!(
            super::format(1_614_816_000, "002 __2 5 -07 Z07"),
            "063  63 0 +00 Z"
        );
    }

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
