//! A synthetic platform for benchmarks and scale tests (issue 13).
//!
//! ```text
//! cargo run --release --example synth -- --components N --environments E [--projects P] OUT
//! ```
//!
//! Writes `OUT/platforms/synth/platform.yaml` and `OUT/components/c<i>/…`. Deterministic: the
//! same arguments give the same bytes (no clock, no randomness; the "digests" come from a
//! fixed-seed mixer). The platform uses every parameter layer above the component defaults
//! (platform, environment, project, instance, instance-per-environment) and Kargo. Components
//! cycle through four shapes so every render path is exercised:
//!
//! - `files`: plain YAML files, a `configMapGenerator` reading a file, patches of all three
//!   kinds in `component.yaml`, one limited to the last environment;
//! - `kustomize`: a kustomize base (resources, `configMapGenerator`, strategic-merge and JSON
//!   6902 patches, labels) built by the native engine, patched again in `component.yaml`;
//! - `overlay`: a kustomize overlay over a base (`namePrefix`, patches on both layers), plus a
//!   plain file;
//! - `inline`: inline resources (one cluster-scoped, a ClusterRole; every other one also a
//!   PriorityClass), a `secretGenerator`, a file and patches.
//!
//! Every Deployment reads its generated ConfigMap, so hash suffixes and name references run.
//! Every seventh image is pinned by digest, and some digests hold a long run of decimal
//! digits, as real digests sometimes do.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What to generate.
pub struct Args {
    pub components: usize,
    pub environments: usize,
    pub projects: usize,
    pub out: PathBuf,
}

impl Args {
    /// `components` × `environments` into `out`, one project per 20 components.
    pub fn new(components: usize, environments: usize, out: impl Into<PathBuf>) -> Args {
        Args {
            components,
            environments,
            projects: components.div_ceil(20),
            out: out.into(),
        }
    }
}

#[allow(dead_code)]
fn usage() -> ! {
    eprintln!(
        "usage: synth --components N --environments E [--projects P] OUT\n\
         default P: one project per 20 components"
    );
    std::process::exit(2)
}

#[allow(dead_code)]
fn parse_args() -> Args {
    let mut components = None;
    let mut environments = None;
    let mut projects = None;
    let mut out = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let num = |it: &mut dyn Iterator<Item = String>| -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or_else(|| usage())
        };
        match a.as_str() {
            "--components" | "-n" => components = Some(num(&mut it)),
            "--environments" | "-e" => environments = Some(num(&mut it)),
            "--projects" | "-p" => projects = Some(num(&mut it)),
            "-h" | "--help" => usage(),
            s if s.starts_with('-') => usage(),
            s => out = Some(PathBuf::from(s)),
        }
    }
    let components = components.unwrap_or_else(|| usage());
    Args {
        components,
        environments: environments.unwrap_or_else(|| usage()),
        projects: projects.unwrap_or(components.div_ceil(20)).min(components),
        out: out.unwrap_or_else(|| usage()),
    }
}

/// splitmix64: a fixed, portable mixer (the generator must not depend on a crate's RNG).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn digest(i: usize) -> String {
    let mut s = String::from("sha256:");
    for k in 0..4 {
        write!(s, "{:016x}", mix((i as u64) << 2 | k)).unwrap();
    }
    if i.is_multiple_of(14) {
        // A run of 20 decimal digits, as in a real digest now and then.
        s.replace_range(7..27, &format!("{:020}", mix(i as u64) % 10u64.pow(19)));
    }
    s
}

fn env_name(e: usize) -> String {
    const NAMES: [&str; 10] = [
        "dev",
        "test",
        "stage",
        "prod-east",
        "prod-west",
        "qa",
        "perf",
        "canary",
        "dr",
        "edge",
    ];
    NAMES
        .get(e)
        .map_or_else(|| format!("env{e}"), |n| n.to_string())
}

fn write(path: &Path, text: &str) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn deployment(name: &str, cm: &str, image: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      serviceAccountName: {name}
      containers:
      - name: app
        image: {image}
        ports:
        - name: http
          containerPort: 8080
        envFrom:
        - configMapRef:
            name: {cm}
        env:
        - name: PORT
          value: "8080"
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
          limits:
            memory: 128Mi
"#
    )
}

fn service(name: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Service
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  selector:
    app: {name}
  ports:
  - name: http
    port: 80
    targetPort: http
"#
    )
}

fn service_account(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\n  labels:\n    app: {name}\n"
    )
}

/// The parameter schema and images shared by every component.
fn header(name: &str, i: usize) -> String {
    let mut s = format!(
        r#"apiVersion: kiln/v1alpha1
kind: Component
metadata:
  name: {name}
spec:
  parameters:
    type: object
    additionalProperties: false
    properties:
      domain: {{type: string, default: example.com}}
      logLevel: {{type: string, enum: [debug, info, warn, error], default: info}}
      team: {{type: string, default: platform}}
      replicas: {{type: integer, minimum: 1, maximum: 50, default: 1}}
      cpu: {{type: string, pattern: "^[0-9]+m$", default: 100m}}
      memory: {{type: string, pattern: "^[0-9]+(Mi|Gi)$", default: 64Mi}}
      feature: {{type: string, default: "off"}}
  images:
  - name: registry.example.com/synth/{name}
    repository: registry.example.com/synth/{name}
"#
    );
    if i.is_multiple_of(7) {
        writeln!(s, "    digest: \"{}\"", digest(i)).unwrap();
    } else {
        writeln!(s, "    tag: \"1.{}.{}\"", i % 5, i % 10).unwrap();
    }
    writeln!(s, "    constraint: \"^1.0.0\"").unwrap();
    s
}

/// Transformers every shape ends with: namespace, labels, annotations, a JSON patch, a merge
/// patch, a strategic-merge patch, and a patch for the last environment only.
fn common_transformers(deploy: &str, cm: &str, last_env: &str) -> String {
    format!(
        r#"  transformers:
  - namespace: "${{env.namespace}}"
  - labels:
      app.kubernetes.io/part-of: synth
      synth.example.com/environment: "${{env.name}}"
    includeSelectors: false
  - annotations:
      synth.example.com/owner: "${{params.team}}"
      synth.example.com/cluster: "${{env.cluster}}"
  - jsonPatch:
      target: {{kind: Deployment, name: {deploy}}}
      patch:
      - {{op: replace, path: /spec/replicas, value: "${{params.replicas}}"}}
      - {{op: replace, path: /spec/template/spec/containers/0/resources/requests/cpu, value: "${{params.cpu}}"}}
      - {{op: replace, path: /spec/template/spec/containers/0/resources/requests/memory, value: "${{params.memory}}"}}
  - mergePatch:
      target: {{kind: ConfigMap, name: {cm}}}
      patch:
        data:
          LOG_LEVEL: "${{params.logLevel}}"
          PUBLIC_HOST: "${{component.name}}.${{params.domain}}"
  - strategicMergePatch:
      target: {{kind: Deployment, name: {deploy}}}
      patch:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {deploy}
        spec:
          template:
            spec:
              containers:
              - name: app
                env:
                - name: FEATURE
                  value: "${{params.feature}}"
  - mergePatch:
      target: {{kind: Deployment, name: {deploy}}}
      patch:
        spec:
          template:
            spec:
              topologySpreadConstraints:
              - maxSkew: 1
                topologyKey: topology.kubernetes.io/zone
                whenUnsatisfiable: ScheduleAnyway
                labelSelector:
                  matchLabels:
                    app: {deploy}
    environments: [{last_env}]
"#
    )
}

fn component(dir: &Path, name: &str, i: usize, last_env: &str) {
    let image = format!("registry.example.com/synth/{name}:0.0.1");
    let cm = format!("{name}-config");
    let mut c = header(name, i);
    match i % 4 {
        // Plain files and a configMapGenerator reading a file.
        0 => {
            write(&dir.join("deployment.yaml"), &deployment(name, &cm, &image));
            write(&dir.join("service.yaml"), &service(name));
            write(&dir.join("serviceaccount.yaml"), &service_account(name));
            write(
                &dir.join("config/app.properties"),
                &format!("component={name}\nshape=files\nindex={i}\n"),
            );
            write!(
                c,
                r#"  generators:
  - files: [deployment.yaml, service.yaml, serviceaccount.yaml]
  - configMapGenerator:
      name: {cm}
      literals: [MODE=files, "INDEX={i}"]
      files: [config/app.properties]
"#
            )
            .unwrap();
            c.push_str(&common_transformers(name, &cm, last_env));
        }
        // A kustomize base with its own generator and patches.
        1 => {
            write(
                &dir.join("base/deployment.yaml"),
                &deployment(name, &cm, &image),
            );
            write(&dir.join("base/service.yaml"), &service(name));
            write(
                &dir.join("base/kustomization.yaml"),
                &format!(
                    r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
- service.yaml
labels:
- pairs:
    synth.example.com/shape: kustomize
configMapGenerator:
- name: {cm}
  literals:
  - MODE=kustomize
  - INDEX={i}
patches:
- path: probes.yaml
- target:
    kind: Service
    name: {name}
  patch: |-
    - op: add
      path: /metadata/annotations
      value:
        synth.example.com/base: "true"
"#
                ),
            );
            write(
                &dir.join("base/probes.yaml"),
                &format!(
                    r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
      - name: app
        readinessProbe:
          httpGet:
            path: /healthz
            port: http
"#
                ),
            );
            write(&dir.join("serviceaccount.yaml"), &service_account(name));
            c.push_str("  generators:\n  - kustomize: base\n  - files: [serviceaccount.yaml]\n");
            c.push_str(&common_transformers(name, &cm, last_env));
        }
        // A kustomize overlay over a base: patches on both layers.
        2 => {
            write(
                &dir.join("base/deployment.yaml"),
                &deployment(name, &cm, &image),
            );
            write(&dir.join("base/service.yaml"), &service(name));
            write(
                &dir.join("base/kustomization.yaml"),
                &format!(
                    r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
- service.yaml
configMapGenerator:
- name: {cm}
  literals:
  - MODE=overlay
"#
                ),
            );
            write(
                &dir.join("overlay/kustomization.yaml"),
                &format!(
                    r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namePrefix: o-
resources:
- ../base
configMapGenerator:
- name: {cm}
  behavior: merge
  literals:
  - INDEX={i}
patches:
- target:
    kind: Deployment
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/0/ports/0/containerPort
      value: 9090
- patch: |-
    apiVersion: v1
    kind: Service
    metadata:
      name: {name}
    spec:
      ports:
      - port: 80
        protocol: TCP
"#
                ),
            );
            write(&dir.join("serviceaccount.yaml"), &service_account(name));
            c.push_str("  generators:\n  - kustomize: overlay\n  - files: [serviceaccount.yaml]\n");
            c.push_str(&common_transformers(&format!("o-{name}"), &cm, last_env));
        }
        // Inline resources, a secretGenerator and a file.
        _ => {
            write(&dir.join("deployment.yaml"), &deployment(name, &cm, &image));
            write!(
                c,
                r#"  generators:
  - files: [deployment.yaml]
  - resources:
    - apiVersion: v1
      kind: ServiceAccount
      metadata:
        name: {name}
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: {cm}
      data:
        MODE: inline
        INDEX: "{i}"
    - apiVersion: v1
      kind: Service
      metadata:
        name: {name}
      spec:
        selector:
          app: {name}
        ports:
        - {{name: http, port: 80, targetPort: http}}
  # Cluster-scoped objects once per cluster: two environments' Applications owning one
  # ClusterRole with different labels would overwrite each other (kiln::k8s::cluster_scoped_conflict).
  - resources:
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRole
      metadata:
        name: {name}-reader
      rules:
      - {{apiGroups: [""], resources: [configmaps], verbs: [get]}}
    when: {{environments: [dev]}}
  - secretGenerator:
      name: {name}-token
      literals: [TOKEN=synthetic-{i}]
"#
            )
            .unwrap();
            if i % 8 == 7 {
                writeln!(
                    c,
                    "  - resources:\n    - {{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {{name: {name}-high}}, value: 1000}}\n    when: {{environments: [dev]}}"
                )
                .unwrap();
            }
            c.push_str(&common_transformers(name, &cm, last_env));
        }
    }
    write(&dir.join("component.yaml"), &c);
}

fn platform(a: &Args) -> String {
    let envs: Vec<String> = (0..a.environments).map(env_name).collect();
    let mut s = String::from(
        r#"apiVersion: kiln/v1alpha1
kind: Platform
metadata:
  name: synth
  description: A synthetic platform (examples/synth.rs).
spec:
  source:
    repoURL: https://git.example.com/synth/platform.git
    branch: main
    renderedPath: deploy
  parameters:
    domain: synth.example.com
    logLevel: info
    team: platform
  clusters:
  - name: nonprod
    server: https://nonprod.k8s.example.com
  - name: prod
    server: https://prod.k8s.example.com
  environments:
"#,
    );
    for (e, name) in envs.iter().enumerate() {
        let prod = name.starts_with("prod") || e >= 5;
        let cluster = if prod { "prod" } else { "nonprod" };
        write!(
            s,
            "  - name: {name}\n    tier: {}\n    cluster: {cluster}\n",
            if prod { "prod" } else { "nonprod" }
        )
        .unwrap();
        if e > 0 {
            writeln!(s, "    from: [{}]", envs[e.min(3) - 1]).unwrap();
        }
        write!(
            s,
            "    parameters:\n      domain: {name}.synth.example.com\n      logLevel: {}\n",
            if prod { "warn" } else { "debug" }
        )
        .unwrap();
    }
    s.push_str(
        "  gitops:\n    argocd:\n      namespace: argocd\n      project: synth\n  kargo:\n    enabled: true\n    promotion:\n",
    );
    writeln!(s, "      {}: {{ auto: true }}", envs[0]).unwrap();
    s.push_str("  projects:\n");
    let last = envs.last().expect("at least one environment");
    for p in 0..a.projects {
        write!(
            s,
            r#"  - name: p{p:04}
    parameters:
      team: team-{t}
    output:
      repoURL: https://git.example.com/synth/p{p:04}-deploy.git
      mode: path-per-environment
      branchPattern: main
      pathPattern: "envs/${{env.name}}"
    components:
"#,
            t = p % 17
        )
        .unwrap();
        // Components are dealt round-robin, so every project mixes all four shapes.
        for i in (p..a.components).step_by(a.projects) {
            write!(
                s,
                "    - path: ../../components/c{i:05}\n      parameters:\n        replicas: {}\n",
                1 + i % 3
            )
            .unwrap();
            if i.is_multiple_of(2) {
                write!(
                    s,
                    "      environments:\n        {last}:\n          parameters:\n            replicas: {}\n            memory: 256Mi\n",
                    2 + i % 5
                )
                .unwrap();
            }
        }
    }
    s
}

/// Writes the platform (tests include this file as a module and call it).
pub fn generate(a: &Args) {
    let last_env = env_name(a.environments - 1);
    for i in 0..a.components {
        let name = format!("c{i:05}");
        component(&a.out.join("components").join(&name), &name, i, &last_env);
    }
    write(&a.out.join("platforms/synth/platform.yaml"), &platform(a));
}

#[allow(dead_code)]
fn main() {
    let a = parse_args();
    generate(&a);
    eprintln!(
        "synth: {} components x {} environments in {} projects ({} BuildPlans) -> {}",
        a.components,
        a.environments,
        a.projects,
        a.components * a.environments,
        a.out.display()
    );
}
