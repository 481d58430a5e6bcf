//! Sprig v3.3.0 as Helm v4.2.3 exposes it (`pkg/engine/funcs.go`: Sprig's `TxtFuncMap`
//! without `env`/`expandenv`), one module per file group of github.com/Masterminds/sprig:
//! [`strings`] (strings.go), [`list`](mod@list) (list.go), [`dict`] (dict.go), [`numeric`]
//! (numeric.go, conversion.go), [`reflect`] (reflect.go), [`regex`] (regex.go), [`crypto`]
//! (crypto.go), [`date`] (date.go), [`semver`] (semver.go, with its Masterminds/semver
//! port), [`url`] (url.go), [`network`] (network.go), [`paths`] (functions.go's `path`
//! entries); [`encode`], [`goregex`] and `decimal` are the Go libraries they stand on. Go's
//! own builtins are `template::funcs`; Helm's (`include`, `tpl`, `toYaml`, …) are the
//! engine's.
//!
//! Non-deterministic functions are deterministic here: `now` is a fixed instant and every
//! random function (`randAlphaNum`, `uuidv4`, `genCA`, …) draws from one generator seeded
//! by the caller (see [`Seed`] and docs in `crates/kiln-helm/src/lib.rs`).

mod bigmod;
mod bigmod_x8;
pub mod crypto;
pub mod date;
mod decimal;
pub mod dict;
pub mod encode;
pub mod goregex;
pub mod keygen;
pub mod list;
pub mod network;
pub mod numeric;
pub mod paths;
pub mod reflect;
pub mod regex;
pub mod semver;
pub mod signatures;
pub mod strings;
pub mod url;

use crate::template::exec::{Exec, Funcs, FxMap};
use crate::template::fmt::{empty, go_quote, s, s_key, s_ref, strval, strval_key, to_f64, to_i64};
use crate::template::funcs::want_min;
use crate::template::unicode;
use crate::template::value::{Map, Value, new_map};
use std::cell::RefCell;
use std::rc::Rc;

/// The deterministic random generator behind `rand*`, `uuidv4` and the `gen*` functions
/// (splitmix64; the seed is a digest of chart, release and values).
pub struct Seed {
    state: u64,
}

impl Seed {
    pub fn new(seed: u64) -> Seed {
        Seed { state: seed }
    }
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
    fn string_from(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[self.below(alphabet.len() as u64) as usize] as char)
            .collect()
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// The most items a function's list holds and the most bytes its text holds. Where Helm
/// allocates without bound until the process dies (`until 100000000000`, `repeat` or
/// `indent` by a billion), kiln stops with an error naming the function
/// (tests/helm/DIVERGENCES.md).
const MAX_ITEMS: u128 = 1 << 24;
const MAX_TEXT: u128 = 1 << 28;

/// The steps of the render's budget one key generation (or bcrypt hash) costs.
pub const KEY_STEPS: u64 = 100_000;

fn bound_items(name: &str, n: u128) -> Result<(), String> {
    if n > MAX_ITEMS {
        return Err(format!(
            "{name}: a list of {n} items is more than kiln builds ({MAX_ITEMS})"
        ));
    }
    Ok(())
}

fn bound_text(name: &str, n: u128) -> Result<(), String> {
    if n > MAX_TEXT {
        return Err(format!(
            "{name}: a text of {n} bytes is more than kiln builds ({MAX_TEXT})"
        ));
    }
    Ok(())
}

/// A `map[string]interface {}` parameter. The executor lets only a map or a nil through
/// (`template::params`); a nil is Go's nil map, which reads as an empty one (`hasKey $none
/// "k"` is false), so it is a new empty map here.
fn as_map(v: &Value, name: &str) -> Result<Map, String> {
    match v {
        Value::Map(m) => Ok(m.clone()),
        Value::Nil => Ok(new_map()),
        other => Err(format!(
            "wrong type for value; expected map[string]interface {{}}; got {} (in {name})",
            other.type_name()
        )),
    }
}

fn list(v: Vec<Value>) -> Value {
    Value::list(v)
}

fn str_list(v: Vec<String>) -> Value {
    Value::list(v.into_iter().map(Value::from).collect())
}

/// Sprig's `strslice`.
fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l.iter().filter(|x| !x.is_nil()).map(strval).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// `r` as a string value, where `r` is a part of the string argument `v` as [`s_ref`]
/// borrowed it: `v` itself when `r` is all of it. Charts run most names through
/// `trunc 63 | trimSuffix "-"` and values through `toString`, which usually change nothing,
/// and a copy of the text for every such call was an allocation and a copy.
fn part_of(v: &Value, r: &str) -> Value {
    part_of_bytes(v, r.as_bytes()).unwrap_or_else(|| Value::from(r))
}

fn part_of_bytes(v: &Value, r: &[u8]) -> Option<Value> {
    match v {
        Value::Str(x) if x.len() == r.len() && std::ptr::eq(x.as_ptr(), r.as_ptr()) => {
            Some(v.clone())
        }
        _ => None,
    }
}

/// Bytes cut from the string argument `v` (`substr`, `trunc` cut at byte offsets, possibly
/// inside a character, which Go keeps and Helm's output shows as U+FFFD): `v` itself when
/// they are all of it.
fn bytes_of(v: &Value, r: &[u8]) -> Value {
    part_of_bytes(v, r).unwrap_or_else(|| Value::from(String::from_utf8_lossy(r).into_owned()))
}

/// Registers Go's builtins and every Sprig function on `f`, in one fixed order; `seed`
/// drives the random ones.
pub fn register(f: &mut Funcs, seed: Rc<RefCell<Seed>>, now: i64) {
    crate::template::funcs::builtins(f);
    strings::register(f);
    list::register(f);
    dict::register(f);
    numeric::register(f);
    strings::encodings(f);
    crypto::hashes(f);
    url::register(f);
    network::register(f);
    reflect::register(f);
    regex::register(f);
    paths::register(f);
    semver::register(f);
    date::register(f, now);
    crypto::random(f, seed);
    // What a key or a bcrypt hash costs of the render's budget: milliseconds, where a
    // step is nanoseconds (`genCA` in a `range` stops within the budget).
    for name in [
        "genCA",
        "genSelfSignedCert",
        "genSignedCert",
        "genPrivateKey",
        "bcrypt",
        "htpasswd",
    ] {
        f.weigh(name, KEY_STEPS);
    }
    f.sign(crate::template::funcs::SIGNATURES);
    f.sign(signatures::SIGNATURES);
}

#[cfg(test)]
mod tests {
    use super::regex::RegexCache;
    use super::*;
    use crate::template::exec::{Exec, TemplateSet};
    use crate::template::parse;

    /// Executes `text` with every function registered, dot nil.
    fn run(text: &str) -> Result<String, String> {
        run_with(text).and_then(|(out, _)| out)
    }

    /// `semverCompare` asked the same question twice answers it the same both times, from
    /// its memo the second time, errors included.
    #[test]
    fn semver_compare_answers_twice_alike() {
        for (text, want) in [
            (
                r#"{{ semverCompare ">=1.21-0" "v1.30.0" }}{{ semverCompare ">=1.21-0" "v1.30.0" }}"#,
                Ok("truetrue".to_string()),
            ),
            (
                r#"{{ semverCompare "<1.21" "v1.30.0" }}{{ semverCompare "<1.21" "v1.30.0" }}"#,
                Ok("falsefalse".to_string()),
            ),
        ] {
            assert_eq!(run(text), want, "{text}");
        }
        let bad = r#"{{ semverCompare "~~1" "1.0.0" }}"#;
        let first = run(bad).expect_err("an improper constraint");
        assert!(first.contains("improper constraint"), "{first}");
        assert_eq!(run(bad).expect_err("again"), first);
    }

    /// The typed adapters (`Funcs::add1` to `add3`) answer a wrong argument count with Go's
    /// message (`text/template` exec.go `evalCall`), as each function's own check did.
    #[test]
    fn arity_errors_are_gos() {
        for (text, want) in [
            ("{{ trim }}", "wrong number of args for trim: want 1 got 0"),
            (
                r#"{{ hasPrefix "a" "b" "c" }}"#,
                "wrong number of args for hasPrefix: want 2 got 3",
            ),
            (
                r#"{{ replace "a" "b" }}"#,
                "wrong number of args for replace: want 3 got 2",
            ),
            (
                r#"{{ not 1 2 }}"#,
                "wrong number of args for not: want 1 got 2",
            ),
        ] {
            let e = run(text).unwrap_err();
            assert!(e.ends_with(want), "{text}: {e}");
        }
    }

    /// [`run`] after the parse, and the execution it ran in.
    fn run_with(text: &str) -> Result<(Result<String, String>, Exec<'static>), String> {
        let mut funcs = Funcs::default();
        register(
            &mut funcs,
            Rc::new(RefCell::new(Seed::new(1))),
            date::FIXED_NOW,
        );
        let funcs = Rc::new(funcs);
        let is_func = |n: &str| funcs.id(n);
        let parsed = parse::parse("t", text, &is_func).map_err(|e| e.to_string())?;
        let mut set = TemplateSet::default();
        set.add("t", "t", parsed);
        let mut ex = Exec::new(Rc::new(set), funcs.clone(), Rc::new(()));
        Ok((ex.execute("t", Value::Nil).map_err(|e| e.to_string()), ex))
    }

    /// The regexps `ex` kept, taken out of it.
    fn cache(ex: &mut Exec) -> RegexCache {
        ex.with_extension(std::mem::take)
    }

    /// A list or text past kiln's bounds is an error naming the function, before anything
    /// is allocated (Helm's process would run out of memory); a sequence at the end of
    /// int64 stops there instead of wrapping around forever.
    #[test]
    fn lists_and_texts_past_the_bounds_are_errors() {
        for (text, name) in [
            ("{{ until 100000000000 }}", "until"),
            ("{{ until -100000000000 }}", "until"),
            ("{{ untilStep 0 100000000000 3 }}", "untilStep"),
            ("{{ seq 1 1000000000 }}", "seq"),
            ("{{ repeat 1000000000 \"ab\" }}", "repeat"),
            ("{{ indent 100000000 \"a\\nb\\nc\" }}", "indent"),
            ("{{ nindent 300000000 \"a\" }}", "nindent"),
            ("{{ randAlphaNum 1000000000 }}", "randAlphaNum"),
        ] {
            let e = run(text).unwrap_err();
            assert!(
                e.contains(&format!("error calling {name}: {name}: a "))
                    && e.contains("more than kiln builds"),
                "{text}: {e}"
            );
        }
        assert_eq!(
            run("{{ seq 9223372036854775806 9223372036854775807 }}").as_deref(),
            Ok("9223372036854775806 9223372036854775807")
        );
        assert_eq!(
            run("{{ untilStep 9223372036854775806 9223372036854775807 5 }}").as_deref(),
            Ok("[9223372036854775806]")
        );
        assert_eq!(
            run("{{ until 3 }} {{ seq 3 1 }}").as_deref(),
            Ok("[0 1 2] 3 2 1")
        );
    }

    /// Sprig's `semverCompare` parses the constraint before the version, so a bad
    /// constraint is the error even when the version is bad too.
    #[test]
    fn semver_compare_reads_the_constraint_first() {
        let e = run("{{ semverCompare \"xx\" \"bad\" }}").unwrap_err();
        assert!(
            e.ends_with("error calling semverCompare: constraint parser error"),
            "{e}"
        );
        let e = run("{{ semverCompare \">=1\" \"bad\" }}").unwrap_err();
        assert!(
            e.ends_with("error calling semverCompare: invalid semantic version"),
            "{e}"
        );
    }

    /// String functions that change nothing give back their argument itself (no copy of
    /// the text); what they give is what Go gives either way.
    #[test]
    fn string_functions_that_change_nothing_give_their_argument() {
        let mut funcs = Funcs::default();
        register(
            &mut funcs,
            Rc::new(RefCell::new(Seed::new(1))),
            date::FIXED_NOW,
        );
        let funcs = Rc::new(funcs);
        let mut ex = Exec::new(Rc::new(TemplateSet::default()), funcs.clone(), Rc::new(()));
        let arg = Value::from("name-x");
        let calls: [(&str, Vec<Value>); 10] = [
            ("trimSuffix", vec![Value::from("-"), arg.clone()]),
            ("trimPrefix", vec![Value::from("-"), arg.clone()]),
            ("trimAll", vec![Value::from("-"), arg.clone()]),
            ("trunc", vec![Value::Int(63), arg.clone()]),
            ("trunc", vec![Value::Int(-63), arg.clone()]),
            ("substr", vec![Value::Int(0), Value::Int(99), arg.clone()]),
            ("lower", vec![arg.clone()]),
            ("trim", vec![arg.clone()]),
            ("toString", vec![arg.clone()]),
            (
                "replace",
                vec![Value::from("+"), Value::from("_"), arg.clone()],
            ),
        ];
        for (name, args) in calls {
            let f = funcs.get(name).unwrap();
            let got = f(&mut ex, &args).unwrap();
            match (&got, &arg) {
                (Value::Str(a), Value::Str(b)) => assert!(Rc::ptr_eq(a, b), "{name}"),
                _ => panic!("{name}: {got:?}"),
            }
        }
        let cases = [
            (r#"{{ "A-b-" | trimSuffix "-" | lower }}"#, "a-b"),
            (
                r#"{{ upper "ab" }}|{{ upper "AB" }}|{{ lower "ÀB" }}"#,
                "AB|AB|àb",
            ),
            (
                r#"{{ lower "12" }}|{{ toString 1.5 }}|{{ toString nil }}"#,
                "12|1.5|<nil>",
            ),
            (
                r#"{{ replace "x" "y" "abc" }}|{{ replace "" "-" "ab" }}"#,
                "abc|-a-b-",
            ),
            (
                r#"{{ trunc 3 "abcd" }}|{{ trunc -2 "abcd" }}|{{ trunc 2 "12345" }}"#,
                "abc|cd|12",
            ),
            (
                r#"{{ substr 1 3 "abcd" }}|{{ trimAll "-" "--a--" }}"#,
                "bc|a",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// `quote` of one argument as of several: nil dropped, others printed and quoted.
    #[test]
    fn quote_of_one_argument_is_quote_of_a_list_of_one() {
        let cases = [
            (r#"{{ quote "a\"b" }}"#, r#""a\"b""#),
            ("{{ quote nil }}|{{ quote }}", "|"),
            ("{{ quote 1.5 }}|{{ quote true }}", r#""1.5"|"true""#),
            (r#"{{ quote "a" nil 2 }}"#, r#""a" "2""#),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// `indent`/`nindent` as Sprig's replace gives them: every line padded, empty ones and
    /// a trailing newline's too, negative widths none; a non-string is Go's type error.
    #[test]
    fn indent_pads_every_line() {
        let cases = [
            (r#"{{ indent 2 "a\nb" }}"#, "  a\n  b"),
            (r#"{{ nindent 2 "a\n\nb\n" }}"#, "\n  a\n  \n  b\n  "),
            (r#"{{ indent 0 "a\nb" }}"#, "a\nb"),
            (r#"{{ nindent -3 "x" }}"#, "\nx"),
            (r#"{{ indent 1 "" }}|{{ nindent 1 "" }}"#, " |\n "),
            (r#"{{ indent 2 "é\nü" }}"#, "  é\n  ü"),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
        for (text, want) in [
            ("{{ indent 3 12 }}", "expected string; found 12"),
            ("{{ nindent 1 nil }}", "cannot assign nil to string"),
            (r#"{{ indent "2" "x" }}"#, r#"expected integer; found "2""#),
        ] {
            let err = run(text).unwrap_err();
            assert!(err.ends_with(want), "{text}: {err}");
        }
    }

    #[test]
    fn cached_regexes_answer_for_their_own_pattern_every_time() {
        // The same patterns again and again (the cache hit), interleaved with others.
        for _ in 0..3 {
            assert_eq!(
                run(r#"{{ regexMatch "^a+$" "aaa" }} {{ regexMatch "^a+$" "ab" }} {{ regexMatch "^b" "ba" }}"#)
                    .unwrap(),
                "true false true"
            );
            assert_eq!(
                run(r#"{{ regexReplaceAll "[^a-z0-9-]" "Foo_Bar" "-" }} {{ regexFind "[0-9]+" "ab12cd" }}"#)
                    .unwrap(),
                "-oo--ar 12"
            );
        }
    }

    #[test]
    fn an_invalid_regex_fails_on_every_call() {
        for _ in 0..2 {
            let e = run(r#"{{ mustRegexMatch "a(" "a" }}"#).unwrap_err();
            assert!(e.contains("error parsing regexp"), "{e}");
            // Non-must: false, not an error, and not remembered as a match.
            assert_eq!(run(r#"{{ regexMatch "a(" "a" }}"#).unwrap(), "false");
        }
    }

    #[test]
    fn the_regex_cache_is_bounded() {
        let text: String = (0..600)
            .map(|i| format!(r#"{{{{ regexMatch "^x{i}$" "x{i}" }}}}"#))
            .collect();
        let (out, mut ex) = run_with(&text).unwrap();
        let c = cache(&mut ex);
        assert_eq!(out.unwrap(), "true".repeat(600));
        assert!(c.unicode.len() <= 512);
    }

    /// Each execution compiles its own: nothing is kept from one render to the next.
    #[test]
    fn regexes_are_kept_for_one_execution() {
        let (out, mut ex) =
            run_with(r#"{{ regexMatch "^a+$" "aaa" }}{{ regexMatch "^a+$" "b" }}"#).unwrap();
        let c = cache(&mut ex);
        assert_eq!(out.unwrap(), "truefalse");
        assert_eq!(c.unicode.len() + c.ascii.len(), 1);
        let (_, mut ex) = run_with("{{ 1 }}").unwrap();
        let c = cache(&mut ex);
        assert!(c.unicode.is_empty() && c.ascii.is_empty());
    }

    /// ASCII patterns on ASCII text run compiled without Unicode; anything else (non-ASCII
    /// text, a pattern that needs Unicode) as before. Both answer as Go's regexp does.
    #[test]
    fn ascii_regexes_answer_as_unicode_ones() {
        let cases = [
            (
                r#"{{ regexMatch "^[^}]*$" "é" }} {{ regexMatch "^.$" "é" }}"#,
                "true true",
            ),
            (r#"{{ regexReplaceAll "[^a-z]" "aé" "-" }}"#, "a-"),
            (r#"{{ regexReplaceAll "[^a-z]" "a_b" "-" }}"#, "a-b"),
            (r#"{{ regexReplaceAll "x" "axb" "é" }}"#, "aéb"),
            (r#"{{ regexReplaceAll "(a)(b)" "abab" "${2}$1" }}"#, "baba"),
            (r#"{{ regexReplaceAllLiteral "a" "aXa" "$1" }}"#, "$1X$1"),
            (
                r#"{{ regexMatch `\pL` "a" }} {{ regexMatch `\pL` "1" }}"#,
                "true false",
            ),
            (
                r#"{{ regexFind "(?i)K" "xk" }}|{{ regexFind "z" "xk" }}"#,
                "k|",
            ),
            (r#"{{ regexFind "(?i)k" "K" }}"#, "\u{212a}"),
            (
                r#"{{ regexSplit "," "a,b,c" -1 }} {{ regexSplit "," "a,b,c" 2 }}"#,
                "[a b c] [a b,c]",
            ),
            (
                r#"{{ regexFindAll "[0-9]" "a1b2c3" 2 }} {{ regexFindAll "[0-9]" "a1b2c3" -1 }}"#,
                "[1 2] [1 2 3]",
            ),
            (
                r#"{{ regexMatch `\d` "٣" }} {{ regexMatch `\w` "é" }} {{ regexMatch `\bb` "a b" }}"#,
                "false false true",
            ),
            (r#"{{ regexMatch "a(" "a" }}"#, "false"),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
        let e = run(r#"{{ mustRegexFind "a(" "a" }}"#).unwrap_err();
        assert!(e.contains("error parsing regexp"), "{e}");
        // Which compile each took.
        let (_, mut ex) = run_with(
            r#"{{ regexMatch "a" "a" }}{{ regexMatch "b" "é" }}{{ regexMatch `\pL` "a" }}"#,
        )
        .unwrap();
        let c = cache(&mut ex);
        assert!(matches!(
            c.ascii.get("a"),
            Some((goregex::AsciiSlot::Lite(..), _))
        ));
        assert!(!c.ascii.contains_key("b") && c.unicode.contains_key("b"));
        assert!(
            matches!(c.ascii.get("\\pL"), Some((goregex::AsciiSlot::Invalid, _)))
                && c.unicode.contains_key("\\pL")
        );
    }

    /// Helm 4.2.3's answers for text functions at their edges.
    #[test]
    fn substr_out_of_range_and_case_mapping_are_gos() {
        for (text, want) in [
            (r#"{{ substr 1 3 "hello" }}"#, "el"),
            (r#"{{ substr -1 3 "hello" }}"#, "hel"),
            (r#"{{ substr 2 -1 "hello" }}"#, "llo"),
            (r#"{{ substr 2 99 "hello" }}"#, "llo"),
            (r#"{{ upper "straße ᾳ ﬀ ᾀ" }}"#, "STRAßE ᾼ ﬀ ᾈ"),
            (r#"{{ lower "ΣΑΣ" }}"#, "σασ"),
            (r#"{{ lower "İSTANBUL K" }}"#, "istanbul k"),
            (r#"{{ upper "héllo" }}"#, "HÉLLO"),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
        for (text, msg) in [
            (
                r#"{{ substr 3 1 "hello world" }}"#,
                "slice bounds out of range [3:1]",
            ),
            (
                r#"{{ substr 100 200 "x" }}"#,
                "slice bounds out of range [100:1]",
            ),
            (
                r#"{{ substr -5 -2 "x" }}"#,
                "slice bounds out of range [:-2]",
            ),
            (
                r#"{{ substr -1 5 "x" }}"#,
                "slice bounds out of range [:5] with length 1",
            ),
            (r#"{{ substr 1 2 "" }}"#, "slice bounds out of range [1:0]"),
        ] {
            let e = run(text).unwrap_err();
            assert!(
                e.contains(&format!("error calling substr: runtime error: {msg}")),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn b32dec_and_b64dec_decode_or_say_where_they_stopped() {
        for (text, want) in [
            (r#"{{ b32dec "NBSWY3DP" }}"#, "hello"),
            (
                r#"{{ b32dec "nbswy3dp" }}"#,
                "illegal base32 data at input byte 0",
            ),
            (r#"{{ b64dec "aGVsbG8=" }}"#, "hello"),
            (
                r#"{{ b64dec "aGVsbG8" }}"#,
                "illegal base64 data at input byte 4",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// What Go's regexp reads differently from the crate, as Helm 4.2.3 answers (each case
    /// checked against helm-python-sdk).
    #[test]
    fn regexes_read_go_syntax_as_go_does() {
        let split = |p: &str, t: &str, n: i64| {
            format!(
                r#"{{{{ $l := regexSplit `{p}` "{t}" {n} }}}}{{{{ len $l }}}}:{{{{ join "|" $l }}}}"#
            )
        };
        let splits = [
            // No empty part for an empty match at either end.
            (split("", "ab", -1), "2:a|b"),
            (split("", "ab", 2), "2:a|b"),
            (split(r"\b", "ab cd", -1), "3:ab| |cd"),
            (split(r"\B", "", -1), "1:"),
            (split(",", "a,b,,c,", -1), "5:a|b||c|"),
            (split("x*", "axbc", 3), "3:a|b|c"),
            (split(",", "a,b", 0), "0:"),
        ];
        for (text, want) in splits {
            assert_eq!(run(&text).unwrap(), want, "{text}");
        }
        let cases = [
            // Braces of \p{…} and \x{…} are theirs, not literal.
            (r#"{{ regexFind `\p{Greek}+` "xΣΑΣ" }}"#, "ΣΑΣ"),
            (r#"{{ regexFind `\P{Greek}+` "ΣxyΣ" }}"#, "xy"),
            (r#"{{ regexMatch `\x{1F600}` "a😀" }}"#, "true"),
            // Quoted literals and octal escapes.
            (r#"{{ regexFind `\Q*\E+` "a***" }}"#, "***"),
            (r#"{{ regexFind `\Qa.b` "xa.b" }}"#, "a.b"),
            (r#"{{ regexReplaceAll `\012` "a\nb" "-" }}"#, "a-b"),
            (r#"{{ regexFind `\123` "xSy" }}"#, "S"),
            // `\<` and `\>` are the characters, not word boundaries.
            (r#"{{ regexReplaceAll `\<` "ab cd" "^" }}"#, "ab cd"),
            (r#"{{ regexFind `\<b\>` "a<b>" }}"#, "<b>"),
            (r#"{{ regexQuoteMeta "a-b#c d&e~f" }}"#, "a-b#c d&e~f"),
            (r#"{{ regexQuoteMeta "1.5*[x]{2}" }}"#, r"1\.5\*\[x\]\{2\}"),
            // Patterns Go refuses: false, as for any pattern that does not parse.
            (r#"{{ regexMatch "a**" "aa" }}"#, "false"),
            (r#"{{ regexMatch "a{1001}" "a" }}"#, "false"),
            (r#"{{ regexMatch "(?x) a b" "ab" }}"#, "false"),
            (
                r#"{{ regexMatch "a*?" "a" }} {{ regexMatch "a??" "a" }}"#,
                "true true",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
        for (p, msg) in [
            ("a**", "invalid nested repetition operator: `**`"),
            ("a*?+", "invalid nested repetition operator: `*?+`"),
            ("a{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            ("(?x)a", "invalid or unsupported Perl syntax: `(?x`"),
        ] {
            let e = run(&format!(r#"{{{{ mustRegexMatch "{p}" "a" }}}}"#)).unwrap_err();
            assert!(
                e.contains(&format!("error parsing regexp: {msg}")),
                "{p}: {e}"
            );
        }
    }

    /// A pattern starts in regex-lite and is compiled by the `regex` crate once its searches
    /// have cost the budget; a text over the budget goes to the crate at once. The answers
    /// are the same before and after.
    #[test]
    fn an_ascii_regex_moves_to_the_regex_crate_once_searched_enough() {
        let call = r#"{{ regexReplaceAll "(-?[^a-z0-9-])+-?" "My_Release.Name" "-" }},"#;
        let (out, mut ex) = run_with(call).unwrap();
        let c = cache(&mut ex);
        assert_eq!(out.unwrap(), "-y-elease-ame,");
        assert!(matches!(
            c.ascii.values().next(),
            Some((goregex::AsciiSlot::Lite(..), _))
        ));
        let (out, mut ex) = run_with(&call.repeat(100)).unwrap();
        let c = cache(&mut ex);
        assert_eq!(out.unwrap(), "-y-elease-ame,".repeat(100));
        assert!(matches!(
            c.ascii.values().next(),
            Some((goregex::AsciiSlot::Full(..), _))
        ));
        let long = "x".repeat(5000);
        let (out, mut ex) = run_with(&format!(r#"{{{{ regexMatch "y$" "{long}" }}}}"#)).unwrap();
        let c = cache(&mut ex);
        assert_eq!(out.unwrap(), "false");
        assert!(matches!(
            c.ascii.values().next(),
            Some((goregex::AsciiSlot::Full(..), _))
        ));
    }

    /// Helm 4.2.3's `snakecase` and `kebabcase` (xstrings' word rules): connector runs keep
    /// their length, punctuation takes no separator, numbers join the word before them.
    #[test]
    fn snakecase_and_kebabcase_are_xstrings() {
        for (text, want) in [
            (r#"{{ snakecase "a--b__c  d" }}"#, "a__b__c__d"),
            (r#"{{ kebabcase "HTTPServer_ID" }}"#, "http-server-id"),
            (r#"{{ snakecase "fooBar-Baz qux" }}"#, "foo_bar_baz_qux"),
            (r#"{{ snakecase "_complex__case_" }}"#, "_complex__case_"),
            (
                r#"{{ snakecase "  lead" }}|{{ snakecase "trail  " }}"#,
                "__lead|trail__",
            ),
            (
                r#"{{ snakecase "foo.Bar" }}|{{ snakecase "ab-.cd" }}"#,
                "foo.bar|ab_.cd",
            ),
            (
                r#"{{ snakecase "a+b" }}|{{ snakecase "hello world!" }}"#,
                "a_+_b|hello_world!",
            ),
            (
                r#"{{ snakecase "HTTP20xOK" }}|{{ snakecase "Bld4Floor3rd" }}"#,
                "http_20x_ok|bld4_floor_3rd",
            ),
            (
                r#"{{ snakecase "123ABC" }}|{{ snakecase "a1b2" }}|{{ snakecase "A1B2" }}"#,
                "123_abc|a_1b2|a1_b2",
            ),
            (
                r#"{{ snakecase "FOO22bar" }}|{{ snakecase "FOO22Bar" }}"#,
                "foo_22bar|foo22_bar",
            ),
            (
                r#"{{ snakecase "XYz" }}|{{ snakecase "v1.2Beta" }}"#,
                "x_yz|v1.2_beta",
            ),
            (
                r#"{{ snakecase "ÉcoleNormale" }}|{{ snakecase "x中文" }}"#,
                "école_normale|x_中文",
            ),
            (
                r#"{{ snakecase "x²y" }}|{{ snakecase "A😀B" }}"#,
                "x_²y|a_😀_b",
            ),
            (r#"{{ kebabcase "a__b" }}|{{ snakecase "-" }}"#, "a--b|_"),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `camelcase` (xstrings v1.5 `ToPascalCase`): a word's case is kept but
    /// for capitals after its capital first letter.
    #[test]
    fn camelcase_is_xstrings_pascal_case() {
        for (text, want) in [
            (
                r#"{{ camelcase "FOO_BAR" }}|{{ camelcase "fooBar" }}"#,
                "FooBar|FooBar",
            ),
            (
                r#"{{ camelcase "aBC dEF" }}|{{ camelcase "some_Words" }}"#,
                "ABCDEF|SomeWords",
            ),
            (
                r#"{{ camelcase "_complex__case_" }}|{{ camelcase "a__" }}"#,
                "_Complex_Case_|A__",
            ),
            (
                r#"{{ camelcase "_" }}|{{ camelcase "__" }}|{{ camelcase "a" }}"#,
                "__|___|A",
            ),
            (
                r#"{{ camelcase "ǆa_ǆb" }}|{{ camelcase "ß_ß" }}|{{ camelcase "x_ⓐ" }}"#,
                "ǄaǄb|ßß|XⒶ",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `title` (`strings.Title`: a letter after any ASCII character but a
    /// letter, digit or `_`, or after a space, is title-cased), `untitle` and `swapcase`
    /// (goutils: words are split at spaces only, a swapped word starts in title case).
    #[test]
    fn title_untitle_and_swapcase_are_gos() {
        for (text, want) in [
            (
                r#"{{ title "o'neil" }}|{{ title "don't" }}"#,
                "O'Neil|Don'T",
            ),
            (
                r#"{{ title "hello-world foo_bar" }}"#,
                "Hello-World Foo_bar",
            ),
            (
                r#"{{ title "x.y,z" }}|{{ title "a1b c2d" }}|{{ title "1st" }}"#,
                "X.Y,Z|A1b C2d|1st",
            ),
            (
                r#"{{ title "ǆemal" }}|{{ title "ß x" }}|{{ title "a²b" }}"#,
                "ǅemal|ß X|A²b",
            ),
            (
                r#"{{ title "a\u00a0b" }}|{{ title "a\u0301b" }}|{{ title "aⅰb" }}"#,
                "A\u{a0}B|A\u{301}b|Aⅰb",
            ),
            (
                r#"{{ untitle "HELLO-WORLD" }}|{{ untitle "A.B" }}|{{ untitle "É É" }}"#,
                "hELLO-WORLD|a.B|é é",
            ),
            (
                r#"{{ swapcase "hello World" }}|{{ swapcase "1a b" }}"#,
                "HELLO wORLD|1A B",
            ),
            (r#"{{ swapcase "ǆ ǅ Ǆ" }}|{{ swapcase "ß" }}"#, "ǅ ǆ ǆ|ß"),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `wrap` (goutils `Wrap`: a long word is kept whole) and `wrapWith`
    /// (`WrapCustom` with long words cut at the width).
    #[test]
    fn wrap_keeps_long_words_and_wrap_with_cuts_them() {
        for (text, want) in [
            (
                r#"{{ wrap 5 "a verylongword here" }}"#,
                "a\nverylongword\nhere",
            ),
            (
                r#"{{ wrapWith 5 "<br>" "a verylongword here" }}"#,
                "a<br>veryl<br>ongwo<br>rd<br>here",
            ),
            (
                r#"{{ wrapWith 5 "" "a verylongword here" }}"#,
                "a\nveryl\nongwo\nrd\nhere",
            ),
            (
                r#"{{ wrap 3 "  leading spaces here" }}"#,
                "leading\nspaces\nhere",
            ),
            (
                r#"{{ wrap 3 "trailing   " }}|{{ wrap 0 "a b c" }}"#,
                "trailing\n  |a\nb\nc",
            ),
            (r#"{{ wrap 5 "a\nb c d e f g" }}"#, "a\nb c\nd e f\ng"),
            (
                r#"{{ wrapWith 3 "|" "abcdefgh ij" }}|{{ wrapWith 4 "|" "ab  cd  ef" }}"#,
                "abc|def|gh|ij|ab |cd |ef",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `nospace` and `initials` (goutils reads bytes as Latin-1 characters: a
    /// 0xA0 or 0x85 byte inside a character is a space, and the bytes are written back as
    /// characters when anything was dropped).
    #[test]
    fn nospace_and_initials_read_bytes_as_goutils() {
        for (text, want) in [
            (
                r#"{{ initials "élan vital" }}|{{ initials "  a  b  " }}"#,
                "\u{c3}v|ab",
            ),
            (
                r#"{{ initials "a\u00a0b c" }}|{{ initials "a\u3000b" }}"#,
                "abc|a",
            ),
            (
                r#"{{ initials "a\u180eb" }}|{{ initials "a-b" }}"#,
                "a\u{8e}|a",
            ),
            (
                r#"{{ nospace "a\u00a0b c" }}|{{ nospace "élan  vital" }}"#,
                "a\u{c2}bc|\u{c3}\u{a9}lanvital",
            ),
            (
                r#"{{ nospace "a\u3000b\tc\nd" }}"#,
                "a\u{e3}\u{80}\u{80}bcd",
            ),
            (
                r#"{{ nospace "a\u2028b" }}|{{ nospace "a\u000bb\u000cc\rd" }}"#,
                "a\u{2028}b|abcd",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }
}
