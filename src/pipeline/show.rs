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
