//! `kiln show platform|buildplans` and `kiln schema`: the validated model and the evaluated
//! BuildPlans printed as YAML or JSON, and the spec's JSON Schemas.

use super::*;

/// Output format of `kiln show`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ShowFormat {
    #[default]
    Yaml,
    Json,
}

pub(super) fn format_value(value: &serde_json::Value, format: ShowFormat) -> String {
    match format {
        ShowFormat::Yaml => crate::yaml::to_yaml(value),
        ShowFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(value).expect("a JSON value always serializes");
            s.push('\n');
            s
        }
    }
}

/// `kiln show platform`: the validated model (defaults filled in) as YAML or JSON.
pub fn show_platform(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let platform = load_platform(fs, platform_dir, root)?;
    let value = serde_json::to_value(&platform).expect("the model always serializes");
    Ok(format_value(&value, format))
}

/// `kiln show platform` through the source stage: components in other repositories are
/// fetched (or taken from the lock and the cache), and the model gets a `sources` list: each
/// remote source used, as locked (`kind`, `url`, `chart`, `requested`, `version`,
/// `resolved`: the commit or digest).
pub fn show_platform_sources(
    opts: &RenderOptions,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let (platform, fetched) = load_with_sources(opts)?;
    let mut value = serde_json::to_value(&platform).expect("the model always serializes");
    if let Some(m) = value.as_object_mut()
        && !fetched.used.is_empty()
    {
        let sources = fetched
            .used
            .iter()
            .map(|e| {
                let mut s = serde_json::Map::new();
                for (k, v) in [
                    ("kind", &e.kind),
                    ("url", &kiln_base::url::redact(&e.url)),
                    ("chart", &e.chart),
                    ("requested", &e.requested),
                    ("version", &e.version),
                    ("resolved", &e.resolved),
                ] {
                    if !v.is_empty() {
                        s.insert(k.into(), serde_json::Value::String(v.clone()));
                    }
                }
                serde_json::Value::Object(s)
            })
            .collect();
        m.insert("sources".into(), serde_json::Value::Array(sources));
    }
    fetched.store_lock().map_err(KilnError::Source)?;
    Ok(format_value(&value, format))
}

/// `kiln show buildplans`: the selected BuildPlans as a YAML or JSON list.
pub fn show_buildplans(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
    selection: &Selection,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let (_, plans) = plan(fs, platform_dir, root, selection)?;
    let value = serde_json::to_value(&plans).expect("plans always serialize");
    Ok(format_value(&value, format))
}

/// `kiln show buildplans` through the source stage (as [`show_platform_sources`]): the
/// instances of components in other repositories evaluate from their fetched trees, with
/// `opts.selection`.
pub fn show_buildplans_sources(
    opts: &RenderOptions,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let (platform, fetched) = load_with_sources(opts)?;
    let plans = evaluate(&platform, &opts.selection).map_err(KilnError::Evaluate)?;
    let value = serde_json::to_value(&plans).expect("plans always serialize");
    fetched.store_lock().map_err(KilnError::Source)?;
    Ok(format_value(&value, format))
}

/// The source stage, then load and validate with the fetched trees.
fn load_with_sources(
    opts: &RenderOptions,
) -> Result<(Platform, crate::source::Resolved), KilnError> {
    let fetched = opts.resolve_sources()?;
    let load_opts = LoadOptions {
        root: opts.root.as_deref(),
        sources: Some(&fetched.trees),
        parsed: Some(&fetched.parsed),
        ..Default::default()
    };
    let loaded = load(opts.fs.as_ref(), &opts.platform_dir, &load_opts).map_err(KilnError::Load)?;
    let platform = validate(loaded).map_err(KilnError::Validate)?;
    Ok((platform, fetched))
}

/// Which schema `kiln schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    Platform,
    Component,
}

/// `kiln schema [platform|component]`: the JSON Schema(s), as committed under `schema/`. Both
/// kinds: a JSON object `{"platform": …, "component": …}`.
pub fn schema(kind: Option<SchemaKind>) -> String {
    match kind {
        Some(SchemaKind::Platform) => crate::spec::schema_text(&crate::spec::platform_schema()),
        Some(SchemaKind::Component) => crate::spec::schema_text(&crate::spec::component_schema()),
        None => crate::spec::schema_text(&serde_json::json!({
            "platform": crate::spec::platform_schema(),
            "component": crate::spec::component_schema(),
        })),
    }
}
