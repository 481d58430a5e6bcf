//! Every top-level kind of k8s-openapi 0.29 (`impl Resource`, outside `apimachinery`), per
//! Kubernetes version: the roots of the tables `regenerate` writes. Listed from the crate's
//! `src/v1_*/**` (its `impl crate::Resource for` items); a kind that only some versions
//! serve sits under k8s-openapi's own `k8s_if_1_*!` macros.

use super::regenerate::Generator;
use k8s_openapi as k;

/// Adds every kind the enabled k8s-openapi version serves.
pub(super) fn add_all(g: &mut Generator) {
    k::k8s_if_1_36! { g.add::<k::api::admissionregistration::v1::MutatingAdmissionPolicy>(); }
    k::k8s_if_1_37! { g.add::<k::api::admissionregistration::v1::MutatingAdmissionPolicy>(); }
    k::k8s_if_1_36! { g.add::<k::api::admissionregistration::v1::MutatingAdmissionPolicyBinding>(); }
    k::k8s_if_1_37! { g.add::<k::api::admissionregistration::v1::MutatingAdmissionPolicyBinding>(); }
    g.add::<k::api::admissionregistration::v1::MutatingWebhookConfiguration>();
    g.add::<k::api::admissionregistration::v1::ValidatingAdmissionPolicy>();
    g.add::<k::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>();
    g.add::<k::api::admissionregistration::v1::ValidatingWebhookConfiguration>();
    g.add::<k::api::admissionregistration::v1alpha1::MutatingAdmissionPolicy>();
    g.add::<k::api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding>();
    k::k8s_if_1_34! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicy>(); }
    k::k8s_if_1_35! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicy>(); }
    k::k8s_if_1_36! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicy>(); }
    k::k8s_if_1_37! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicy>(); }
    k::k8s_if_1_34! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding>(); }
    k::k8s_if_1_35! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding>(); }
    k::k8s_if_1_36! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding>(); }
    k::k8s_if_1_37! { g.add::<k::api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding>(); }
    k::k8s_if_1_33! { g.add::<k::api::admissionregistration::v1beta1::ValidatingAdmissionPolicy>(); }
    k::k8s_if_1_33! { g.add::<k::api::admissionregistration::v1beta1::ValidatingAdmissionPolicyBinding>(); }
    g.add::<k::api::apiserverinternal::v1alpha1::StorageVersion>();
    g.add::<k::api::apps::v1::ControllerRevision>();
    g.add::<k::api::apps::v1::DaemonSet>();
    g.add::<k::api::apps::v1::Deployment>();
    g.add::<k::api::apps::v1::ReplicaSet>();
    g.add::<k::api::apps::v1::StatefulSet>();
    g.add::<k::api::authentication::v1::SelfSubjectReview>();
    g.add::<k::api::authentication::v1::TokenRequest>();
    g.add::<k::api::authentication::v1::TokenReview>();
    g.add::<k::api::authorization::v1::LocalSubjectAccessReview>();
    g.add::<k::api::authorization::v1::SelfSubjectAccessReview>();
    g.add::<k::api::authorization::v1::SelfSubjectRulesReview>();
    g.add::<k::api::authorization::v1::SubjectAccessReview>();
    g.add::<k::api::autoscaling::v1::HorizontalPodAutoscaler>();
    g.add::<k::api::autoscaling::v1::Scale>();
    g.add::<k::api::autoscaling::v2::HorizontalPodAutoscaler>();
    g.add::<k::api::batch::v1::CronJob>();
    g.add::<k::api::batch::v1::Job>();
    g.add::<k::api::certificates::v1::CertificateSigningRequest>();
    k::k8s_if_1_37! { g.add::<k::api::certificates::v1::ClusterTrustBundle>(); }
    k::k8s_if_1_37! { g.add::<k::api::certificates::v1::PodCertificateRequest>(); }
    k::k8s_if_1_33! { g.add::<k::api::certificates::v1alpha1::ClusterTrustBundle>(); }
    k::k8s_if_1_34! { g.add::<k::api::certificates::v1alpha1::ClusterTrustBundle>(); }
    k::k8s_if_1_35! { g.add::<k::api::certificates::v1alpha1::ClusterTrustBundle>(); }
    k::k8s_if_1_36! { g.add::<k::api::certificates::v1alpha1::ClusterTrustBundle>(); }
    k::k8s_if_1_34! { g.add::<k::api::certificates::v1alpha1::PodCertificateRequest>(); }
    g.add::<k::api::certificates::v1beta1::ClusterTrustBundle>();
    k::k8s_if_1_35! { g.add::<k::api::certificates::v1beta1::PodCertificateRequest>(); }
    k::k8s_if_1_36! { g.add::<k::api::certificates::v1beta1::PodCertificateRequest>(); }
    k::k8s_if_1_37! { g.add::<k::api::certificates::v1beta1::PodCertificateRequest>(); }
    g.add::<k::api::coordination::v1::Lease>();
    g.add::<k::api::coordination::v1alpha2::LeaseCandidate>();
    g.add::<k::api::coordination::v1beta1::LeaseCandidate>();
    g.add::<k::api::core::v1::Binding>();
    g.add::<k::api::core::v1::ComponentStatus>();
    g.add::<k::api::core::v1::ConfigMap>();
    g.add::<k::api::core::v1::Endpoints>();
    g.add::<k::api::core::v1::Event>();
    g.add::<k::api::core::v1::LimitRange>();
    g.add::<k::api::core::v1::Namespace>();
    g.add::<k::api::core::v1::Node>();
    g.add::<k::api::core::v1::PersistentVolume>();
    g.add::<k::api::core::v1::PersistentVolumeClaim>();
    g.add::<k::api::core::v1::Pod>();
    g.add::<k::api::core::v1::PodTemplate>();
    g.add::<k::api::core::v1::ReplicationController>();
    g.add::<k::api::core::v1::ResourceQuota>();
    g.add::<k::api::core::v1::Secret>();
    g.add::<k::api::core::v1::Service>();
    g.add::<k::api::core::v1::ServiceAccount>();
    g.add::<k::api::discovery::v1::EndpointSlice>();
    g.add::<k::api::events::v1::Event>();
    g.add::<k::api::flowcontrol::v1::FlowSchema>();
    g.add::<k::api::flowcontrol::v1::PriorityLevelConfiguration>();
    k::k8s_if_1_37! { g.add::<k::api::lifecycle::v1alpha1::Eviction>(); }
    k::k8s_if_1_37! { g.add::<k::api::lifecycle::v1alpha1::EvictionRequest>(); }
    g.add::<k::api::networking::v1::IPAddress>();
    g.add::<k::api::networking::v1::Ingress>();
    g.add::<k::api::networking::v1::IngressClass>();
    g.add::<k::api::networking::v1::NetworkPolicy>();
    g.add::<k::api::networking::v1::ServiceCIDR>();
    k::k8s_if_1_33! { g.add::<k::api::networking::v1beta1::IPAddress>(); }
    k::k8s_if_1_34! { g.add::<k::api::networking::v1beta1::IPAddress>(); }
    k::k8s_if_1_35! { g.add::<k::api::networking::v1beta1::IPAddress>(); }
    k::k8s_if_1_36! { g.add::<k::api::networking::v1beta1::IPAddress>(); }
    k::k8s_if_1_33! { g.add::<k::api::networking::v1beta1::ServiceCIDR>(); }
    k::k8s_if_1_34! { g.add::<k::api::networking::v1beta1::ServiceCIDR>(); }
    k::k8s_if_1_35! { g.add::<k::api::networking::v1beta1::ServiceCIDR>(); }
    k::k8s_if_1_36! { g.add::<k::api::networking::v1beta1::ServiceCIDR>(); }
    g.add::<k::api::node::v1::RuntimeClass>();
    g.add::<k::api::policy::v1::Eviction>();
    g.add::<k::api::policy::v1::PodDisruptionBudget>();
    g.add::<k::api::rbac::v1::ClusterRole>();
    g.add::<k::api::rbac::v1::ClusterRoleBinding>();
    g.add::<k::api::rbac::v1::Role>();
    g.add::<k::api::rbac::v1::RoleBinding>();
    k::k8s_if_1_34! { g.add::<k::api::resource::v1::DeviceClass>(); }
    k::k8s_if_1_35! { g.add::<k::api::resource::v1::DeviceClass>(); }
    k::k8s_if_1_36! { g.add::<k::api::resource::v1::DeviceClass>(); }
    k::k8s_if_1_37! { g.add::<k::api::resource::v1::DeviceClass>(); }
    k::k8s_if_1_37! { g.add::<k::api::resource::v1::DeviceTaintRule>(); }
    k::k8s_if_1_34! { g.add::<k::api::resource::v1::ResourceClaim>(); }
    k::k8s_if_1_35! { g.add::<k::api::resource::v1::ResourceClaim>(); }
    k::k8s_if_1_36! { g.add::<k::api::resource::v1::ResourceClaim>(); }
    k::k8s_if_1_37! { g.add::<k::api::resource::v1::ResourceClaim>(); }
    k::k8s_if_1_34! { g.add::<k::api::resource::v1::ResourceClaimTemplate>(); }
    k::k8s_if_1_35! { g.add::<k::api::resource::v1::ResourceClaimTemplate>(); }
    k::k8s_if_1_36! { g.add::<k::api::resource::v1::ResourceClaimTemplate>(); }
    k::k8s_if_1_37! { g.add::<k::api::resource::v1::ResourceClaimTemplate>(); }
    k::k8s_if_1_34! { g.add::<k::api::resource::v1::ResourceSlice>(); }
    k::k8s_if_1_35! { g.add::<k::api::resource::v1::ResourceSlice>(); }
    k::k8s_if_1_36! { g.add::<k::api::resource::v1::ResourceSlice>(); }
    k::k8s_if_1_37! { g.add::<k::api::resource::v1::ResourceSlice>(); }
    k::k8s_if_1_33! { g.add::<k::api::resource::v1alpha3::DeviceClass>(); }
    g.add::<k::api::resource::v1alpha3::DeviceTaintRule>();
    k::k8s_if_1_33! { g.add::<k::api::resource::v1alpha3::ResourceClaim>(); }
    k::k8s_if_1_33! { g.add::<k::api::resource::v1alpha3::ResourceClaimTemplate>(); }
    k::k8s_if_1_36! { g.add::<k::api::resource::v1alpha3::ResourcePoolStatusRequest>(); }
    k::k8s_if_1_37! { g.add::<k::api::resource::v1alpha3::ResourcePoolStatusRequest>(); }
    k::k8s_if_1_33! { g.add::<k::api::resource::v1alpha3::ResourceSlice>(); }
    g.add::<k::api::resource::v1beta1::DeviceClass>();
    g.add::<k::api::resource::v1beta1::ResourceClaim>();
    g.add::<k::api::resource::v1beta1::ResourceClaimTemplate>();
    g.add::<k::api::resource::v1beta1::ResourceSlice>();
    g.add::<k::api::resource::v1beta2::DeviceClass>();
    k::k8s_if_1_36! { g.add::<k::api::resource::v1beta2::DeviceTaintRule>(); }
    k::k8s_if_1_37! { g.add::<k::api::resource::v1beta2::DeviceTaintRule>(); }
    g.add::<k::api::resource::v1beta2::ResourceClaim>();
    g.add::<k::api::resource::v1beta2::ResourceClaimTemplate>();
    g.add::<k::api::resource::v1beta2::ResourceSlice>();
    g.add::<k::api::scheduling::v1::PriorityClass>();
    k::k8s_if_1_35! { g.add::<k::api::scheduling::v1alpha1::Workload>(); }
    k::k8s_if_1_36! { g.add::<k::api::scheduling::v1alpha2::PodGroup>(); }
    k::k8s_if_1_36! { g.add::<k::api::scheduling::v1alpha2::Workload>(); }
    k::k8s_if_1_37! { g.add::<k::api::scheduling::v1alpha3::CompositePodGroup>(); }
    k::k8s_if_1_37! { g.add::<k::api::scheduling::v1alpha3::PodGroup>(); }
    k::k8s_if_1_37! { g.add::<k::api::scheduling::v1alpha3::Workload>(); }
    k::k8s_if_1_37! { g.add::<k::api::scheduling::v1beta1::PodGroup>(); }
    k::k8s_if_1_37! { g.add::<k::api::scheduling::v1beta1::Workload>(); }
    g.add::<k::api::storage::v1::CSIDriver>();
    g.add::<k::api::storage::v1::CSINode>();
    g.add::<k::api::storage::v1::CSIStorageCapacity>();
    g.add::<k::api::storage::v1::StorageClass>();
    g.add::<k::api::storage::v1::VolumeAttachment>();
    k::k8s_if_1_34! { g.add::<k::api::storage::v1::VolumeAttributesClass>(); }
    k::k8s_if_1_35! { g.add::<k::api::storage::v1::VolumeAttributesClass>(); }
    k::k8s_if_1_36! { g.add::<k::api::storage::v1::VolumeAttributesClass>(); }
    k::k8s_if_1_37! { g.add::<k::api::storage::v1::VolumeAttributesClass>(); }
    k::k8s_if_1_33! { g.add::<k::api::storage::v1alpha1::VolumeAttributesClass>(); }
    k::k8s_if_1_34! { g.add::<k::api::storage::v1alpha1::VolumeAttributesClass>(); }
    k::k8s_if_1_33! { g.add::<k::api::storage::v1beta1::VolumeAttributesClass>(); }
    k::k8s_if_1_34! { g.add::<k::api::storage::v1beta1::VolumeAttributesClass>(); }
    k::k8s_if_1_35! { g.add::<k::api::storage::v1beta1::VolumeAttributesClass>(); }
    k::k8s_if_1_36! { g.add::<k::api::storage::v1beta1::VolumeAttributesClass>(); }
    k::k8s_if_1_37! { g.add::<k::api::storagemigration::v1::StorageVersionMigration>(); }
    k::k8s_if_1_33! { g.add::<k::api::storagemigration::v1alpha1::StorageVersionMigration>(); }
    k::k8s_if_1_34! { g.add::<k::api::storagemigration::v1alpha1::StorageVersionMigration>(); }
    k::k8s_if_1_35! { g.add::<k::api::storagemigration::v1beta1::StorageVersionMigration>(); }
    k::k8s_if_1_36! { g.add::<k::api::storagemigration::v1beta1::StorageVersionMigration>(); }
    k::k8s_if_1_37! { g.add::<k::api::storagemigration::v1beta1::StorageVersionMigration>(); }
    g.add::<k::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>();
    g.add::<k::kube_aggregator::pkg::apis::apiregistration::v1::APIService>();
}
