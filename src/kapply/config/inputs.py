"""Telling Configs apart from the resources of an app's input, as kapp does.

A document with `apiVersion: kapp.k14s.io/v1alpha1` is a Config and is not deployed. A v1 ConfigMap labeled
`kapp.k14s.io/config` holds a Config in `data["config.yml"]` and is deployed as well. The Config the deploy uses
is kapp's default config followed by the user's, in input order.
"""

from __future__ import annotations

from collections.abc import Sequence

from kapply import objects, yamlio
from kapply.config.config import Config, merge, parse_config
from kapply.config.default import default_config
from kapply.errors import ConfigError
from kapply.objects import Document


def split_configs(docs: Sequence[Document]) -> tuple[list[Document], list[Config]]:
    """The resources to deploy, and the user Configs among the documents."""
    resources, configs = [], []
    for doc in docs:
        if objects.api_version(doc.obj) == objects.CONFIG_API_VERSION:
            configs.append(parse_config(doc.obj, doc.origin))
            continue
        if (
            objects.api_version(doc.obj) == "v1"
            and objects.kind(doc.obj) == "ConfigMap"
            and objects.CONFIG_LABEL in objects.labels(doc.obj)
        ):
            origin = f"{doc.origin} data 'config.yml'"
            data = doc.obj.get("data")
            text = data.get("config.yml", "") if isinstance(data, dict) else ""
            if not isinstance(text, str):
                raise ConfigError(f"Parsing {origin}: expected a string, but was {type(text).__name__}")
            configs.append(parse_config(yamlio.load_mapping(text, origin, ConfigError), origin))
        resources.append(doc)
    return resources, configs


def with_defaults(user_configs: Sequence[Config]) -> Config:
    """kapp's default config followed by the user's configs."""
    return merge([default_config(), *user_configs])
