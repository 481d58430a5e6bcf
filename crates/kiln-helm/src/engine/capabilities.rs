//! `.Capabilities`, after Helm v4.2.3 `pkg/chart/common/capabilities.go`: `KubeVersion`
//! (with its pointer-receiver `String`), `APIVersions` (`Has`), `HelmVersion`, and the
//! defaults `helm template` renders with.

use super::*;

/// `.Capabilities.KubeVersion`. Its `String` method has a pointer receiver
/// (pkg/chart/common/capabilities.go), so only the field itself, reached through the
/// `*Capabilities` (or a variable or `with` holding it), prints as `v1.36.0`: a function
/// gets a copy in an interface, with no address, and fmt prints that copy's fields
/// (`quote`, `toString`, `printf "%v"`, `default`, `include`'s dot: `{v1.36.0 v1.36.0 1 36}`).
#[derive(Clone)]
pub(super) struct KubeVersion {
    version: String,
    major: String,
    minor: String,
    /// False for the copy a function receives ([`Object::as_argument`]).
    addressable: bool,
}

impl Object for KubeVersion {
    fn type_name(&self) -> &str {
        "common.KubeVersion"
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(Value::from(match name {
            "Version" | "GitVersion" => self.version.clone(),
            "String" if self.addressable => self.version.clone(),
            "Major" => self.major.clone(),
            "Minor" => self.minor.clone(),
            _ => return None,
        }))
    }
    fn call(&self, _: &Cx, _: &str, _: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        if self.addressable {
            self.version.clone()
        } else {
            self.fields_text()
        }
    }
    fn as_argument(&self) -> Option<Value> {
        self.addressable.then(|| {
            Value::Object(Rc::new(KubeVersion {
                addressable: false,
                ..self.clone()
            }))
        })
    }
    fn marshal(&self) -> Option<Marshaled> {
        Some(Marshaled::Fields(vec![
            ("Version", Value::from(self.version.clone())),
            ("Major", Value::from(self.major.clone())),
            ("Minor", Value::from(self.minor.clone())),
        ]))
    }
}

impl KubeVersion {
    /// fmt's `%v` of the struct itself, as it prints inside `.Capabilities` (not through
    /// its `String` method).
    fn fields_text(&self) -> String {
        format!(
            "{{{} {} {} {}}}",
            self.version, self.version, self.major, self.minor
        )
    }
}

/// `.Capabilities.APIVersions`.
pub(super) struct ApiVersions(Vec<String>);

impl Object for ApiVersions {
    fn type_name(&self) -> &str {
        "common.VersionSet"
    }
    fn arity(&self, name: &str) -> Option<usize> {
        (name == "Has").then_some(1)
    }
    fn field(&self, _: &str) -> Option<Value> {
        None
    }
    fn call(&self, _: &Cx, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        match name {
            "Has" => {
                let v = args.first().map(s).unwrap_or_default();
                Some(Ok(Value::Bool(self.0.contains(&v))))
            }
            _ => None,
        }
    }
    fn display(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        Some(
            self.0
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), Value::from(v.clone())))
                .collect(),
        )
    }
    fn marshal(&self) -> Option<Marshaled> {
        Some(Marshaled::Value(Value::list(
            self.0.iter().map(|v| Value::from(v.clone())).collect(),
        )))
    }
}

/// `.Capabilities.HelmVersion`: helm-python-sdk's `version.BuildInfo` (its JSON names are
/// the struct's tags; the empty git fields are `omitempty`).
pub(super) struct HelmVersion;

/// (Go field, JSON name, value) of [`HelmVersion`], in declaration order.
pub(super) const HELM_VERSION: [(&str, &str, &str); 5] = [
    ("Version", "version", "v4.2"),
    ("GitCommit", "git_commit", ""),
    ("GitTreeState", "git_tree_state", ""),
    ("GoVersion", "go_version", "go1.26.6"),
    ("KubeClientVersion", "kube_client_version", "v1.36"),
];

impl Object for HelmVersion {
    fn type_name(&self) -> &str {
        "version.BuildInfo"
    }
    fn field(&self, name: &str) -> Option<Value> {
        HELM_VERSION
            .iter()
            .find(|f| f.0 == name)
            .map(|f| Value::from(f.2))
    }
    fn call(&self, _: &Cx, _: &str, _: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        let values: Vec<&str> = HELM_VERSION.iter().map(|f| f.2).collect();
        format!("{{{}}}", values.join(" "))
    }
    fn marshal(&self) -> Option<Marshaled> {
        Some(Marshaled::Fields(
            HELM_VERSION
                .iter()
                .filter(|f| !f.2.is_empty())
                .map(|f| (f.1, Value::from(f.2)))
                .collect(),
        ))
    }
}

/// `.Capabilities`: Go's `*common.Capabilities`.
pub(super) struct Capabilities {
    kube_version: Rc<KubeVersion>,
    api_versions: Rc<ApiVersions>,
}

impl Object for Capabilities {
    fn type_name(&self) -> &str {
        "*common.Capabilities"
    }
    fn kind(&self) -> &'static str {
        "ptr"
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "KubeVersion" => Value::Object(self.kube_version.clone()),
            "APIVersions" => Value::Object(self.api_versions.clone()),
            "HelmVersion" => Value::Object(Rc::new(HelmVersion)),
            _ => return None,
        })
    }
    fn call(&self, _: &Cx, _: &str, _: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        format!(
            "{{{} {} {}}}",
            self.kube_version.fields_text(),
            self.api_versions.display(),
            HelmVersion.display()
        )
    }
    fn marshal(&self) -> Option<Marshaled> {
        Some(Marshaled::Fields(vec![
            ("KubeVersion", Value::Object(self.kube_version.clone())),
            ("APIVersions", Value::Object(self.api_versions.clone())),
            ("HelmVersion", Value::Object(Rc::new(HelmVersion))),
        ]))
    }
}

/// The API versions `helm template` reports without a cluster (client-go v0.36.1).
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha2",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// The default `.Capabilities.KubeVersion`.
pub const DEFAULT_KUBE_VERSION: &str = "v1.36.0";

/// `Capabilities` for a context.
pub(super) fn capabilities(ctx: &Context) -> Result<Value, String> {
    let v = sprig::semver::Version::parse(&ctx.kube_version)
        .map_err(|_| format!("invalid kube version {:?}", ctx.kube_version))?;
    let kv = KubeVersion {
        version: format!("v{}.{}.{}", v.major, v.minor, v.patch),
        major: v.major.to_string(),
        minor: v.minor.to_string(),
        addressable: true,
    };
    Ok(Value::Object(Rc::new(Capabilities {
        kube_version: Rc::new(kv),
        api_versions: Rc::new(ApiVersions(ctx.api_versions.clone())),
    })))
}
