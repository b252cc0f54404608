"""Pulling from OCI registries: image references, a registry client (manifests, blobs, authentication), unpacking
layers as untrusted input, and fetching an App's `image` and `imgpkgBundle` sources with the bundle's ImagesLock."""

from kapply.oci.auth import Credentials, RegistryAuth, from_docker_config, from_secret
from kapply.oci.bundle import Fetched, ImagesLock, Kind, LockedImage, fetch
from kapply.oci.errors import OciError
from kapply.oci.extract import ExtractLimits
from kapply.oci.reference import Reference, parse_reference
from kapply.oci.registry import LINUX_AMD64, Limits, Platform, RegistryClient

__all__ = [
    "LINUX_AMD64",
    "Credentials",
    "ExtractLimits",
    "Fetched",
    "ImagesLock",
    "Kind",
    "Limits",
    "LockedImage",
    "OciError",
    "Platform",
    "Reference",
    "RegistryAuth",
    "RegistryClient",
    "fetch",
    "from_docker_config",
    "from_secret",
    "parse_reference",
]
