//! `.Files`, after Helm v4.2.3 `pkg/engine/files.go`: `Get`, `GetBytes`, `Glob`, `Lines`,
//! `AsConfig`, `AsSecrets`, over the chart's non-template files, reading on first use what
//! the load deferred.

use super::*;
use crate::template::value::Dict;

/// `.Files`: a chart's non-template files, shared with the chart rather than copied into
/// each render: `order` lists the entries by name (Go's sorted map keys), the last of a
/// repeated name winning as a map insert would; `.Files.Glob` narrows `order` alone.
pub(super) struct Files {
    all: Rc<Contents>,
    order: Rc<[usize]>,
}

/// A chart's files as one render sees them. A file of a chart directory that only `.Files`
/// reaches was not read at load ([`FileData::Deferred`]): it is read on first use, through
/// the file system the execution carries ([`Cx`]), and kept for the rest of the render, so
/// a file no template uses is never read. The read is kept here, not in the chart, so a
/// chart rendered again reads again, through that render's file system (`kiln render`
/// records each render's reads for its cache).
pub(super) struct Contents {
    files: Rc<ChartFiles>,
    read: Vec<OnceCell<Result<Vec<u8>, String>>>,
}

impl Contents {
    fn name(&self, i: usize) -> &str {
        &self.files[i].0
    }

    fn bytes(&self, cx: &Cx, i: usize) -> Result<&[u8], String> {
        let (name, data) = &self.files[i];
        match data {
            FileData::Loaded(d) => Ok(d),
            FileData::Deferred(real) => self.read[i]
                .get_or_init(|| match cx.fs {
                    Some(fs) => read_deferred(fs, name, real),
                    None => Err(format!("cannot read chart file {name:?}: no file system")),
                })
                .as_deref()
                .map_err(Clone::clone),
        }
    }
}

impl Files {
    pub(super) fn new(files: Rc<ChartFiles>) -> Files {
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by(|&a, &b| files[a].0.cmp(&files[b].0).then(b.cmp(&a)));
        order.dedup_by(|later, kept| files[*later].0 == files[*kept].0);
        let read = files.iter().map(|_| OnceCell::new()).collect::<Vec<_>>();
        Files {
            all: Rc::new(Contents { files, read }),
            order: order.into(),
        }
    }

    /// Every file of this view, in name order, read.
    pub(super) fn read_all<'s>(&'s self, cx: &Cx) -> Result<Vec<(&'s str, &'s [u8])>, String> {
        self.order
            .iter()
            .map(|&i| Ok((self.all.name(i), self.all.bytes(cx, i)?)))
            .collect()
    }

    fn bytes(&self, cx: &Cx, name: &str) -> Result<Option<&[u8]>, String> {
        match self.order.binary_search_by(|&i| self.all.name(i).cmp(name)) {
            Ok(at) => self.all.bytes(cx, self.order[at]).map(Some),
            Err(_) => Ok(None),
        }
    }

    pub(super) fn get(&self, cx: &Cx, name: &str) -> Result<String, String> {
        Ok(self
            .bytes(cx, name)?
            .map(crate::template::fmt::go_text)
            .unwrap_or_default())
    }
}

impl Object for Files {
    fn type_name(&self) -> &str {
        "engine.files"
    }
    fn arity(&self, name: &str) -> Option<usize> {
        match name {
            "Get" | "GetBytes" | "Glob" | "Lines" => Some(1),
            "AsConfig" | "AsSecrets" => Some(0),
            _ => None,
        }
    }
    fn field(&self, _: &str) -> Option<Value> {
        None
    }
    fn call(&self, cx: &Cx, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let a0 = args.first().map(s).unwrap_or_default();
        Some(Ok(match name {
            "Get" | "GetBytes" => match self.get(cx, &a0) {
                Ok(t) => Value::from(t),
                Err(e) => return Some(Err(e)),
            },
            "Glob" => {
                let order: Vec<usize> = self
                    .order
                    .iter()
                    .copied()
                    .filter(|&i| glob_match_double(&a0, self.all.name(i)))
                    .collect();
                Value::Object(Rc::new(Files {
                    all: self.all.clone(),
                    order: order.into(),
                }))
            }
            "Lines" => {
                let t = match self.get(cx, &a0) {
                    Ok(t) => t,
                    Err(e) => return Some(Err(e)),
                };
                if t.is_empty() {
                    Value::list(Vec::new())
                } else {
                    let t = t.strip_suffix('\n').unwrap_or(&t);
                    Value::list(t.split('\n').map(Value::from).collect())
                }
            }
            "AsConfig" | "AsSecrets" => {
                let files = match self.read_all(cx) {
                    Ok(f) => f,
                    Err(e) => return Some(Err(e)),
                };
                let m: Dict = files
                    .into_iter()
                    .map(|(k, v)| {
                        let base = k.rsplit('/').next().unwrap_or(k).to_string();
                        let val = if name == "AsConfig" {
                            crate::chart::lossy_text(v)
                        } else {
                            crate::sprig::encode::b64(v)
                        };
                        (base, Value::from(val))
                    })
                    .collect();
                Value::from(
                    yaml::to_yaml_func(&Value::map(m), yaml::Encoder::SigsYaml).unwrap_or_default(),
                )
            }
            _ => return None,
        }))
    }
    /// Go's `map[name:[bytes]]`. Printing reaches no file system, so a file read on first
    /// use shows as empty, whether or not a template read it: the same text either way
    /// (tests/helm/DIVERGENCES.md).
    fn display(&self) -> String {
        let parts: Vec<String> = self
            .order
            .iter()
            .map(|&i| {
                let bytes: Vec<String> = match &self.all.files[i].1 {
                    FileData::Loaded(d) => d.iter().map(u8::to_string).collect(),
                    FileData::Deferred(_) => Vec::new(),
                };
                format!("{}:[{}]", self.all.name(i), bytes.join(" "))
            })
            .collect();
        format!("map[{}]", parts.join(" "))
    }
    fn range(&self, cx: &Cx) -> Option<Result<Vec<(String, Value)>, String>> {
        Some(self.read_all(cx).map(|files| {
            files
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::from(crate::template::fmt::go_text(v))))
                .collect()
        }))
    }
    fn entry_count(&self) -> Option<usize> {
        Some(self.order.len())
    }
}
