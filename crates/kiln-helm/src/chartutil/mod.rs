//! Values as Helm v4.2.3 computes them (its `pkg/chart/common/util` and `pkg/chart/v2/util`,
//! once `chartutil`): [`dependencies`] (`ProcessDependenciesWithMerge`), [`coalesce`]
//! (`CoalesceValues`), [`origin`] (which layer of that precedence set a value: kiln's, for
//! findings), [`schema`] (`ValidateAgainstSchema`), [`strvals`] (`--set` and its kin, `pkg/strvals`); this module holds
//! what `values.go` does for them: a values map made from JSON or empty. The values files
//! themselves are read by the loader (`chart::loader::load_values`).

pub mod coalesce;
pub mod dependencies;
pub mod origin;
pub mod schema;
pub mod strvals;

use crate::chart::Chart;
use crate::sprig::semver;
use crate::template::value::{Dict, Map, Value, new_map};
use std::cell::RefCell;
use std::rc::Rc;

/// A values map from JSON (the kiln spec's `values:`), numbers as float64 like YAML's.
pub fn from_json_map(v: &serde_json::Value) -> Map {
    match Value::from_json(v) {
        Value::Map(m) => m,
        _ => new_map(),
    }
}

/// An empty values map.
pub fn empty() -> Map {
    into_map(Value::map(Dict::new()))
}

fn into_map(v: Value) -> Map {
    match v {
        Value::Map(m) => m,
        _ => new_map(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::{coalesce::*, strvals::*};
    use crate::chart::loader::{load_values, merge_user};

    fn m(text: &str) -> Map {
        into_map(crate::yaml::parse_one(text).unwrap())
    }

    /// A copied table equals its original and shares no table with it (at any depth, in
    /// lists too), as `Value::deep_copy` gives it; tables in the copy can change alone.
    #[test]
    fn copied_tables_share_no_table_with_their_original() {
        let orig =
            m("a:\n  b:\n    c: 1\n  l:\n  - x: 1\n  - [ {y: 2} ]\n  s: [1, two]\nd: text\n");
        let copy = copy_map(&orig);
        assert!(Value::Map(copy.clone()).deep_eq(&Value::Map(orig.clone())));
        assert!(Value::Map(copy.clone()).deep_eq(&Value::Map(orig.clone()).deep_copy()));
        fn tables(v: &Value, out: &mut Vec<*const ()>) {
            match v {
                Value::Map(m) => {
                    out.push(Rc::as_ptr(m) as *const ());
                    m.borrow().values().for_each(|v| tables(v, out));
                }
                Value::List(l) => l.iter().for_each(|v| tables(v, out)),
                _ => {}
            }
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        tables(&Value::Map(orig.clone()), &mut a);
        tables(&Value::Map(copy.clone()), &mut b);
        assert_eq!(a.len(), 5);
        assert_eq!(a.len(), b.len());
        assert!(a.iter().all(|p| !b.contains(p)));
        let Some(Value::Map(inner)) = copy.borrow().get("a").cloned() else {
            panic!("a")
        };
        inner.borrow_mut().insert("new", Value::Int(1));
        assert!(!Value::Map(copy).deep_eq(&Value::Map(orig)));
    }

    fn parsed(kind: SetKind, line: &str) -> Result<String, String> {
        let d = new_map();
        parse_into(line, &d, kind, &|p| Ok(format!("<{p}>")))?;
        Ok(crate::yaml::to_json(&Value::Map(d), false, false))
    }

    /// Each expectation is what real Helm v4.2.3's strvals gives (helm-python-sdk).
    fn check(kind: SetKind, cases: &[(&str, Result<&str, &str>)]) {
        for (line, want) in cases {
            let got = parsed(kind, line);
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                *want,
                "{kind:?} {line:?}"
            );
        }
    }

    /// Each expectation is what real Helm v4.2.3's `Chart.load` gives for the text as a
    /// chart's values.yaml (helm-python-sdk; the errors' Helm wording follows "cannot load
    /// values.yaml: ").
    #[test]
    fn values_files_merge_their_documents_as_load_values_does() {
        let ok = |text: &str| {
            let v = load_values(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            crate::yaml::to_json(&Value::Map(v), false, false)
        };
        let cases = [
            (
                "a: 1\nb: {x: 1, z: [1]}\n---\nb: {y: 2, z: [2]}\nc: 3\n",
                r#"{"a":1,"b":{"true":2,"x":1,"z":[2]},"c":3}"#,
            ),
            ("a: 1\n--- # two\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("a: 1\n---\n# nothing\n---\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("---\na: 1\n...\n", r#"{"a":1}"#),
            ("a: 1\n ---\nb: 2\n", r#"{"a":"1 ---","b":2}"#),
            ("a: 1\n...\n---\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("a: 1\n---\t\r\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("---\n---\n", "{}"),
            ("", "{}"),
            // A later null is kept as null here; coalescing deletes the key afterwards.
            ("a: {x: 1}\n---\na: null\n", r#"{"a":null}"#),
        ];
        for (text, want) in cases {
            assert_eq!(ok(text), want, "{text:?}");
        }
        let bad = |text: &str| load_values(text).map(|_| ()).unwrap_err();
        let e = bad("a: 1\n--- b: 2\nc: 3\n");
        assert_eq!(e.line, 2);
        assert_eq!(
            e.message,
            "error reading yaml document: invalid Yaml document separator: b: 2"
        );
        let e = bad("a: 1\n---\n- 1\n");
        assert_eq!(e.line, 3);
        assert!(
            e.message
                .ends_with("cannot unmarshal array into Go value of type map[string]interface {}"),
            "{}",
            e.message
        );
        assert!(
            bad("a: 1\n---\nfoo\n")
                .message
                .contains("cannot unmarshal string")
        );
        // A YAML error in a later document is placed on its line in the file.
        let e = bad("a: 1\n---\nb: 2\nc: [\n");
        assert!(e.line >= 4, "{e:?}");
        assert!(
            e.message.starts_with(&format!("yaml: line {}: ", e.line)),
            "{e:?}"
        );
    }

    #[test]
    fn set_parses_like_strvals() {
        check(
            SetKind::Set,
            &[
                (
                    "a.b=1,c[1]=x,d=true,e=007,f.g\\.h=y",
                    Ok(r#"{"a":{"b":1},"c":[null,"x"],"d":true,"e":"007","f":{"g.h":"y"}}"#),
                ),
                (
                    "a=TRUE,b=Null,c=-0,d=-1,e=+1,f=0x1,g=00,h=9223372036854775808",
                    Ok(
                        r#"{"a":true,"b":null,"c":0,"d":-1,"e":1,"f":"0x1","g":"00","h":"9223372036854775808"}"#,
                    ),
                ),
                ("a=1,", Ok(r#"{"a":1}"#)),
                ("a=b=c", Ok(r#"{"a":"b=c"}"#)),
                (".a=1", Ok("{}")),
                ("a=,b=2", Ok(r#"{"a":"","b":2}"#)),
                ("name1=value1,=x", Ok(r#"{"name1":"value1"}"#)),
                ("a[1]=x,a[0].b=y", Ok(r#"{"a":[{"b":"y"},"x"]}"#)),
                ("a[0][1]=x", Ok(r#"{"a":[[null,"x"]]}"#)),
                ("a[0]=1,a[0].b=2", Ok(r#"{"a":[{"b":2}]}"#)),
                // No value, or an index left open: Helm's io.EOF ends the line quietly.
                ("a[0]", Ok(r#"{"a":[]}"#)),
                ("a[0", Ok("{}")),
                ("a[0][1", Ok(r#"{"a":[]}"#)),
                ("a=fal\u{17f}e", Ok(r#"{"a":false}"#)),
                ("a", Err(r#"key "a" has no value"#)),
                ("a.b", Err(r#"key "b" has no value"#)),
                ("a,b=2", Err(r#"key "a" has no value (cannot end with ,)"#)),
                ("a.=1", Err(r#"key map "a" has no value"#)),
                (
                    "a[0]b=1",
                    Err("unexpected data at end of array index: ['b']"),
                ),
                ("a[-1]=1", Err("negative -1 index not allowed")),
                (
                    "a[x]=1",
                    Err(r#"error parsing index: strconv.Atoi: parsing "x": invalid syntax"#),
                ),
                (
                    "a[99999999999999999999]=1",
                    Err(
                        r#"error parsing index: strconv.Atoi: parsing "99999999999999999999": value out of range"#,
                    ),
                ),
                (
                    "a=1,a.b=2",
                    Err(
                        "unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}",
                    ),
                ),
                (
                    "a=null,a[0]=1",
                    Err(
                        "unable to parse key: interface conversion: interface {} is nil, not []interface {}",
                    ),
                ),
                (
                    "a[0]=1,a[0][0]=2",
                    Err(
                        "unable to parse key: interface conversion: interface {} is int64, not []interface {}",
                    ),
                ),
            ],
        );
        let deep = "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.bb.cc.dd.ee";
        assert!(parsed(SetKind::Set, &format!("{deep}=1")).is_ok());
        assert_eq!(
            parsed(SetKind::Set, &format!("{deep}.ff=1")),
            Err(
                "value name nested level is greater than maximum supported nested level of 30"
                    .into()
            )
        );
    }

    #[test]
    fn braces_make_lists() {
        check(
            SetKind::Set,
            &[
                ("a={--v=4,--foo}", Ok(r#"{"a":["--v=4","--foo"]}"#)),
                ("a={}", Ok(r#"{"a":[""]}"#)),
                ("a.b={x,y}", Ok(r#"{"a":{"b":["x","y"]}}"#)),
                ("a[0]={x}", Ok(r#"{"a":[["x"]]}"#)),
                ("a={x\\,y,z}", Ok(r#"{"a":["x,y","z"]}"#)),
                ("a=\\{x}", Ok(r#"{"a":"{x}"}"#)),
                ("a={1,true,null,007}", Ok(r#"{"a":[1,true,null,"007"]}"#)),
                ("a={x},b=1", Ok(r#"{"a":["x"],"b":1}"#)),
                ("a={x", Err("list must terminate with '}'")),
                ("a={x}y", Err(r#"key "y" has no value"#)),
                ("a={x,{y},z}", Err(r#"key "z}" has no value"#)),
            ],
        );
        check(
            SetKind::String,
            &[(
                "a=1,b=true,c={1,2},d=null",
                Ok(r#"{"a":"1","b":"true","c":["1","2"],"d":"null"}"#),
            )],
        );
        check(
            SetKind::File,
            &[("a=x,b={y,z}", Ok(r#"{"a":"<x>","b":["<y>","<z>"]}"#))],
        );
    }

    #[test]
    fn huge_index_is_refused_before_allocating() {
        let t = std::time::Instant::now();
        assert_eq!(
            parsed(SetKind::Set, "a[100000000]=1"),
            Err("index of 100000000 is greater than maximum supported index of 65536".into())
        );
        assert_eq!(
            parsed(SetKind::Set, "a[65537]=1"),
            Err("index of 65537 is greater than maximum supported index of 65536".into())
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        let d = new_map();
        apply_set(&d, "a[65536]=1").unwrap();
        let Some(Value::List(l)) = d.borrow().get("a").cloned() else {
            panic!("a list")
        };
        assert_eq!(l.len(), 65537);
    }

    #[test]
    fn json_and_literal_lines() {
        check(
            SetKind::Json,
            &[
                (r#"a={"b":[1,2]}"#, Ok(r#"{"a":{"b":[1,2]}}"#)),
                ("a=", Ok(r#"{"a":null}"#)),
                ("a= ,b=1", Ok(r#"{"a":null,"b":1}"#)),
                ("a=1 , b=2", Ok(r#"{" b":2,"a":1}"#)),
                (r#"a[0]={"x":1}"#, Ok(r#"{"a":[{"x":1}]}"#)),
                (r#"a="x,y",b=true"#, Ok(r#"{"a":"x,y","b":true}"#)),
                ("a=-0.5e3,b=1e2", Ok(r#"{"a":-500,"b":100}"#)),
                ("a[1]=null,a[0]=2", Ok(r#"{"a":[2,null]}"#)),
                ("a=1x", Err(r#"key "x" has no value"#)),
                ("a=[1,2]x", Err(r#"key "x" has no value"#)),
                ("a=1.5.3", Err(r#"key "3" has no value"#)),
            ],
        );
        assert!(parsed(SetKind::Json, r#"a={"x":"#).is_err());
        assert!(parsed(SetKind::Json, "a=nul").is_err());
        check(
            SetKind::Literal,
            &[
                ("a=b,c=d", Ok(r#"{"a":"b,c=d"}"#)),
                ("a.b=1,2", Ok(r#"{"a":{"b":"1,2"}}"#)),
                ("a[0]=x\\y", Ok(r#"{"a":["x\\y"]}"#)),
                ("a=", Ok(r#"{"a":""}"#)),
                ("a[1]=x=y", Ok(r#"{"a":[null,"x=y"]}"#)),
                ("a,b=c", Ok(r#"{"a,b":"c"}"#)),
                ("a[0].b=x,y", Ok(r#"{"a":[{"b":"x,y"}]}"#)),
                ("a", Err(r#"key "a" has no value"#)),
                ("a.b", Err(r#"key "b" has no value"#)),
            ],
        );
    }

    #[test]
    fn flags_apply_in_helms_order() {
        let d = m("o: {a: file, b: file, c: file, d: file, e: file, f: file}\nl: [x, y]\n");
        let flags = SetFlags {
            set: vec!["o.c=set,o.d=set,o.e=set".into(), "l[1]=z".into()],
            string: vec!["o.d=string".into()],
            json: vec!["o.b=\"json\",o.c=1".into(), r#"{"o":{"j":[1]}}"#.into()],
            file: vec!["o.e=path".into()],
            literal: vec!["o.f=literal,x".into()],
        };
        apply_set_flags(&d, &flags, &|p| Ok(format!("<{p}>"))).unwrap();
        assert_eq!(
            crate::yaml::to_json(&Value::Map(d), false, false),
            r#"{"l":["x","z"],"o":{"a":"file","b":"json","c":"set","d":"string","e":"<path>","f":"literal,x","j":[1]}}"#
        );
        let err = apply_set_flags(
            &new_map(),
            &SetFlags {
                json: vec!["a=[1".into()],
                ..SetFlags::default()
            },
            &|_| Err("no".into()),
        );
        assert_eq!(
            err,
            Err((SetKind::Json, "failed parsing --set-json data a=[1".into()))
        );
    }

    #[test]
    fn user_files_merge_deeply() {
        let a = m("x: {a: 1, b: 2}\nz: 1\n");
        merge_user(&a, &m("x: {b: 3}\nz: [1]\n"));
        assert_eq!(
            crate::yaml::to_json(&Value::Map(a), false, false),
            r#"{"x":{"a":1,"b":3},"z":[1]}"#
        );
    }

    /// Helm's `coalesceTablesFullKey` as it was first ported (keys collected up front), to
    /// pin the in-place walk to it.
    fn coalesce_tables_collected(dst: &Map, src: &Map, merge: bool) {
        if Rc::ptr_eq(dst, src) {
            return;
        }
        let src_non_nil: Vec<std::rc::Rc<str>> = src
            .borrow()
            .iter()
            .filter(|(_, v)| !v.is_nil())
            .map(|(k, _)| k.clone())
            .collect();
        let nil_keys: Vec<std::rc::Rc<str>> = dst
            .borrow()
            .iter()
            .filter(|(_, v)| v.is_nil())
            .map(|(k, _)| k.clone())
            .collect();
        for k in nil_keys {
            src.borrow_mut().insert(k, Value::Nil);
        }
        let entries: Vec<(std::rc::Rc<str>, Value)> = src
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, val) in entries {
            let dv = dst.borrow().get(&key).cloned();
            match dv {
                Some(Value::Nil) if !merge && src_non_nil.contains(&key) => {
                    dst.borrow_mut().remove(&key);
                }
                None => {
                    dst.borrow_mut().insert(key, val);
                }
                Some(Value::Map(dm)) => {
                    if let Value::Map(sm) = &val {
                        coalesce_tables_collected(&dm, sm, merge);
                    }
                }
                Some(_) => {}
            }
        }
    }

    /// Helm's `cleanNilValues` as it was first ported.
    fn clean_nil_collected(m: &Map) {
        let keys: Vec<std::rc::Rc<str>> = m.borrow().keys().cloned().collect();
        for k in keys {
            let v = m.borrow().get(&k).cloned();
            match v {
                Some(Value::Nil) => {
                    m.borrow_mut().remove(&k);
                }
                Some(Value::Map(sub)) => clean_nil_collected(&sub),
                _ => {}
            }
        }
    }

    fn json(m: &Map) -> String {
        crate::yaml::to_json(&Value::Map(m.clone()), false, false)
    }

    const TABLES: &[&str] = &[
        "{}",
        "a: null\n",
        "a: 1\nb: null\nc: {d: null, e: 2, f: {g: null}}\nl: [null, {x: null}]\n",
        "a: {b: null, c: 1}\nd: null\n",
        "a: {b: 2, d: 3}\nd: 4\ne: null\n",
        "a: x\nc: {d: 1, f: 3}\nl: [1]\nb: {z: null}\n",
        "c: null\nb: 7\nn: null\n",
    ];

    #[test]
    fn coalescing_in_place_is_the_collected_walk() {
        for merge in [false, true] {
            for d in TABLES {
                for s in TABLES {
                    let (d1, s1) = (m(d), m(s));
                    let (d2, s2) = (m(d), m(s));
                    coalesce_tables(&d1, &s1, merge);
                    coalesce_tables_collected(&d2, &s2, merge);
                    let case = format!("merge={merge} dst={d:?} src={s:?}");
                    assert_eq!(json(&d1), json(&d2), "dst, {case}");
                    // Helm writes dst's nulls into src; that stays as it was too.
                    assert_eq!(json(&s1), json(&s2), "src, {case}");
                }
            }
        }
    }

    #[test]
    fn a_clean_copy_is_a_copy_cleaned() {
        for t in TABLES {
            let orig = m(t);
            let before = json(&orig);
            let fused = copy_map_clean(&orig);
            let two_steps = copy_map(&orig);
            clean_nil_collected(&two_steps);
            assert_eq!(json(&fused), json(&two_steps), "{t:?}");
            // The defaults are only read.
            assert_eq!(json(&orig), before, "{t:?}");
        }
    }

    #[test]
    fn null_deletes_a_default() {
        let dst = m("a: {b: null, c: 1}\n");
        coalesce_tables(&dst, &m("a: {b: 2, d: 3}\n"), false);
        assert_eq!(
            crate::yaml::to_json(&Value::Map(dst), false, false),
            r#"{"a":{"c":1,"d":3}}"#
        );
    }
}
