"""kapply's last-applied fingerprint against the real kapp's.

Every expected MinimalString text and MD5 here was produced by the real kapp (v0.60.0-16), not by kapply: each case
was deployed with kapp, the live object was then rewritten (for the synthetic cases, a custom resource whose `spec`
keeps unknown fields), and the text and MD5 were read from kapp's own debug output
(`KAPP_DEBUG_RESOURCE_WITH_HISTORY=true kapp deploy --diff-run`, which prints its recalculated `MinimalString` and
MD5 for every resource with a last-applied copy). The inputs are what kapp diffed: the left side as the API server
returned it, the right side as the `kapp.k14s.io/original` annotation held it; for the synthetic cases only `spec`
differed, for the real kinds only the parts shown. The texts are spelled with _removed/_replaced/_added for kapp's
pairs of operations; each test first checks that the assembled text is the one whose MD5 kapp printed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from kapply.diff.ops_diff import _emit_ops, fingerprint, minimal_string, ops_diff

Case = tuple[str, dict[str, Any], dict[str, Any], str, str]

LONG = "word " * 25 + "end"
K129, K140 = "k" * 129, "k" * 140  # keys longer than 128 are written as "? key"


def _value(value: str) -> str:
    """kapp's `value:` line: inline for a scalar; for a block, `value` is its lines (indented, each ending in \\n)."""
    return f"  value:\n{value}" if value.endswith("\n") else f"  value: {value}\n"


def _removed(path: str, value: str) -> str:
    """The two operations kapp writes for a field only the left side has: test its value, then remove it."""
    return f"- type: test\n  path: {path}\n{_value(value)}- type: remove\n  path: {path}\n"


def _replaced(path: str, old: str, new: str) -> str:
    """The two operations kapp writes for a changed field: test the old value, then replace it."""
    return f"- type: test\n  path: {path}\n{_value(old)}- type: replace\n  path: {path}\n{_value(new)}"


def _added(path: str, value: str) -> str:
    """The two operations kapp writes for a field only the right side has: test it is absent, then set it."""
    return f"- type: test\n  path: {path}\n  absent: true\n- type: replace\n  path: {path}?\n{_value(value)}"


def _pod_defaults(*, restart_policy: bool = True) -> str:
    """kapp's removals of what the API server defaults in a pod template with one container (from its
    terminationMessagePath on, in kapp's order); without restartPolicy where the manifest set it (the Job's)."""
    pod = "/spec/template/spec"
    return (
        _removed(f"{pod}/containers/0/terminationMessagePath", "/dev/termination-log")
        + _removed(f"{pod}/containers/0/terminationMessagePolicy", "File")
        + _removed(f"{pod}/dnsPolicy", "ClusterFirst")
        + (_removed(f"{pod}/restartPolicy", "Always") if restart_policy else "")
        + _removed(f"{pod}/schedulerName", "default-scheduler")
        + _removed(f"{pod}/securityContext", "{}")
        + _removed(f"{pod}/terminationGracePeriodSeconds", "30")
    )


# (name, left `spec`, right `spec`, kapp's MinimalString, kapp's MD5)
SPEC_CASES: list[Case] = [
    (
        "removed-key",
        {"a": "x", "b": "y"},
        {"a": "x"},
        _removed("/spec/b", '"y"'),
        "3fe7ab5056ad5f2ddd250daeff966fdb",
    ),
    (
        "added-key",
        {"a": "x"},
        {"a": "x", "b": {"c": [1, 2]}},
        _added("/spec/b", "    c:\n    - 1\n    - 2\n"),
        "70bc8c2179b515e56c2560b98a6cd36c",
    ),
    (
        "changed-scalar",
        {"a": "y", "n": 4, "t": False},
        {"a": "x", "n": 3, "t": True},
        _replaced("/spec/a", '"y"', "x") + _replaced("/spec/n", "4", "3") + _replaced("/spec/t", "false", "true"),
        "6a60376498689cbab1215c0efc779c66",
    ),
    (
        "int-vs-float",
        {"big": 1000001, "f": 2, "g": 0.25, "h": 7, "i": 1.5, "tiny": 1},
        {"big": 1000000, "f": 2, "g": 0.5, "h": 123456789, "i": 1, "tiny": 1e-05},
        (
            _replaced("/spec/big", "1000001", "1e+06")
            + _replaced("/spec/g", "0.25", "0.5")
            + _replaced("/spec/h", "7", "1.23456789e+08")
            + _replaced("/spec/i", "1.5", "1")
            + _replaced("/spec/tiny", "1", "1e-05")
        ),
        "abf024922a1f2a6c16922ad6f3e747fe",
    ),
    (
        "nested-maps",
        {"a": {"b": {"c": {"d": 2, "f": "y"}}, "z": {"k": 1}}},
        {"a": {"b": {"c": {"d": 1, "e": "x"}}, "z": {}}},
        (
            _replaced("/spec/a/b/c/d", "2", "1")
            + _added("/spec/a/b/c/e", "x")
            + _removed("/spec/a/b/c/f", '"y"')
            + _removed("/spec/a/z/k", "1")
        ),
        "4605c021565b58f29959d252ea6b52ad",
    ),
    (
        "array-grown",
        {"l": [1]},
        {"l": [1, 2, 3, {"a": "b"}, [5, 6]]},
        (
            "- type: test\n"
            "  path: /spec/l/1\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value: 2\n"
            "- type: test\n"
            "  path: /spec/l/2\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value: 3\n"
            "- type: test\n"
            "  path: /spec/l/3\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value:\n"
            "    a: b\n"
            "- type: test\n"
            "  path: /spec/l/4\n"
            "  absent: true\n"
            "- type: replace\n"
            "  path: /spec/l/-\n"
            "  value:\n"
            "  - 5\n"
            "  - 6\n"
        ),
        "b9d83d57bf36c285c58773ec8c99586a",
    ),
    (
        "array-shrunk",
        {"l": [1, 2, {"x": "y"}, [3]]},
        {"l": [1]},
        _removed("/spec/l/1", "2") + _removed("/spec/l/1", '    x: "y"\n') + _removed("/spec/l/1", "  - 3\n"),
        "1718351042c39233cf63e52628058357",
    ),
    (
        "array-changed",
        {"l": [{"name": "a", "v": 2}, "t", 3.5]},
        {"l": [{"name": "a", "v": 1}, "s", 3]},
        _replaced("/spec/l/0/v", "2", "1") + _replaced("/spec/l/1", "t", "s") + _replaced("/spec/l/2", "3.5", "3"),
        "08dd422b10e5806f80b472034fb3eb9b",
    ),
    (
        "type-change",
        {"b": "true", "l": {"0": 1}, "m": "a", "n": "1", "s": 1, "x": {"k": "v"}},
        {"b": True, "l": [1, 2], "m": {"a": 1}, "n": 1, "s": "1", "x": None},
        (
            _replaced("/spec/b", '"true"', "true")
            + _replaced("/spec/l", '    "0": 1\n', "  - 1\n  - 2\n")
            + _replaced("/spec/m", "a", "    a: 1\n")
            + _replaced("/spec/n", '"1"', "1")
            + _replaced("/spec/s", "1", '"1"')
            + _replaced("/spec/x", "    k: v\n", "null")
        ),
        "70f536cb199dcb6020ae2aab7cc1ce99",
    ),
    (
        "escaped-keys",
        {"a/b": 2, "c~d": 3, "e:f": 4, "q?": 5, "x": {}, "~1": 6},
        {"a/b": 1, "c~d": 2, "e:f": 3, "q?": 4, "x": {"p/q~r:s": "v"}, "~1": 5},
        (
            _replaced("/spec/a~1b", "2", "1")
            + _replaced("/spec/c~0d", "3", "2")
            + _replaced("/spec/e~7f", "4", "3")
            + _replaced("/spec/q?", "5", "4")
            + _added("/spec/x/p~1q~0r~7s", "v")
            + _replaced("/spec/~01", "6", "5")
        ),
        "5053a9983612e3953f4a4b14ceae2dd4",
    ),
    (
        "numeric-keys",
        {"1": "x", "10": "y", "2": "z", "m": {}},
        {"m": {"01": "d", "1": "a", "10": "b", "2": "c"}},
        (
            _removed("/spec/1", "x")
            + _removed("/spec/10", '"y"')
            + _removed("/spec/2", "z")
            + _added("/spec/m/01", "d")
            + _added("/spec/m/1", "a")
            + _added("/spec/m/10", "b")
            + _added("/spec/m/2", "c")
        ),
        "78b7c811842d1b4b284ea3e9e04b9832",
    ),
    (
        "unicode",
        {"emoji": "x", "é": "ö", "ключ": "другое"},
        {"emoji": "🙂 smile", "é": "ü", "ключ": "значение"},
        (
            _replaced("/spec/emoji", "x", '"\\U0001F642 smile"')
            + _replaced("/spec/é", "ö", "ü")
            + _replaced("/spec/ключ", "другое", "значение")
        ),
        "e992daa0eb4f6171e2f2eabd8347cc32",
    ),
    (
        "multi-line",
        {"s": "line1\n", "t": "a", "u": "y\nz"},
        {"s": "line1\nline2\n", "t": "a\n  b\n", "u": "x"},
        (
            "- type: test\n"
            "  path: /spec/s\n"
            "  value: |\n"
            "    line1\n"
            "- type: replace\n"
            "  path: /spec/s\n"
            "  value: |\n"
            "    line1\n"
            "    line2\n"
            "- type: test\n"
            "  path: /spec/t\n"
            "  value: a\n"
            "- type: replace\n"
            "  path: /spec/t\n"
            "  value: |\n"
            "    a\n"
            "      b\n"
            "- type: test\n"
            "  path: /spec/u\n"
            "  value: |-\n"
            "    y\n"
            "    z\n"
            "- type: replace\n"
            "  path: /spec/u\n"
            "  value: x\n"
        ),
        "35dd83a9e6a32202a7859b9e68cda60d",
    ),
    (
        "null-values",
        {"a": 1, "b": None, "c": [1, None]},
        {"a": None, "b": 1, "c": [None, 1]},
        (
            _replaced("/spec/a", "1", "null")
            + _replaced("/spec/b", "null", "1")
            + _replaced("/spec/c/0", "1", "null")
            + _replaced("/spec/c/1", "null", "1")
        ),
        "8ea73163ec1ed4c61a58d173e6f0b0b4",
    ),
    (
        "empty-maps-lists",
        {"l": {}, "m": [], "n": {"x": {}}, "o": {}, "p": []},
        {"l": [], "m": {}, "n": {"x": []}},
        (
            _replaced("/spec/l", "{}", "[]")
            + _replaced("/spec/m", "[]", "{}")
            + _replaced("/spec/n/x", "{}", "[]")
            + _removed("/spec/o", "{}")
            + _removed("/spec/p", "[]")
        ),
        "1b47d542a5524518d681888ec97682f4",
    ),
    (
        "strings-needing-quotes",
        {
            "a": "x",
            "b": "true",
            "c": "1.5",
            "d": "",
            "e": "a: b",
            "f": "#x",
            "g": "null",
            "h": "0x1F",
            "i": "2020-01-01",
            "j": " lead",
            "k": "@at",
            "l": "yes",
            "m": "1e+06",
            "n": "'q'",
            "o": "tab\there",
        },
        {"a": "x"},
        (
            _removed("/spec/b", '"true"')
            + _removed("/spec/c", '"1.5"')
            + _removed("/spec/d", '""')
            + _removed("/spec/e", "'a: b'")
            + _removed("/spec/f", "'#x'")
            + _removed("/spec/g", '"null"')
            + _removed("/spec/h", '"0x1F"')
            + _removed("/spec/i", '"2020-01-01"')
            + _removed("/spec/j", "' lead'")
            + _removed("/spec/k", "'@at'")
            + _removed("/spec/l", '"yes"')
            + _removed("/spec/m", '"1e+06"')
            + _removed("/spec/n", "'''q'''")
            + _removed("/spec/o", '"tab\\there"')
        ),
        "5df03e7c36aa0ba7bfc2b1919b9b4593",
    ),
    (
        "long-strings",
        {
            "a": LONG,
            "b": {"c": {"d": LONG}},
            "e": [LONG],
            K140: 1,
        },
        {"a": "x"},
        (
            "- type: test\n"
            "  path: /spec/a\n"
            "  value: word word word word word word word word word word word word word word word\n"
            "    word word word word word word word word word word end\n"
            "- type: replace\n"
            "  path: /spec/a\n"
            "  value: x\n"
            "- type: test\n"
            "  path: /spec/b\n"
            "  value:\n"
            "    c:\n"
            "      d: word word word word word word word word word word word word word word word\n"
            "        word word word word word word word word word word end\n"
            "- type: remove\n"
            "  path: /spec/b\n"
            "- type: test\n"
            "  path: /spec/e\n"
            "  value:\n"
            "  - word word word word word word word word word word word word word word word word\n"
            "    word word word word word word word word word end\n"
            "- type: remove\n"
            "  path: /spec/e\n"
            "- type: test\n"
            "  path: /spec/" + K140 + "\n"
            "  value: 1\n"
            "- type: remove\n"
            "  path: /spec/" + K140 + "\n"
        ),
        "d9f1780eeef154bce3e59d49dd4a90b6",
    ),
    (
        "no-change",
        {"a": {"b": [1, 2.5, "x"]}},
        {"a": {"b": [1, 2.5, "x"]}},
        "[]\n",
        "58e0494c51d30eb3494f7c9198986bb9",
    ),
    (
        "long-keys",
        {
            "l": [{K129: {"a": "b"}}],
            "m": {
                K140: 1,
                "x": 1,
            },
        },
        {"m": {"x": 1}},
        (
            "- type: test\n"
            "  path: /spec/l\n"
            "  value:\n"
            "  - ? " + K129 + "\n"
            "    : a: b\n"
            "- type: remove\n"
            "  path: /spec/l\n"
            "- type: test\n"
            "  path: /spec/m/" + K140 + "\n"
            "  value: 1\n"
            "- type: remove\n"
            "  path: /spec/m/" + K140 + "\n"
        ),
        "bca60fde5871aab53a6dcdda5beb24e3",
    ),
    (
        "byte-order-mark",
        {"a": "\ufeffbom text", "b": {"\ufeffk": "v\ufeff"}, "c": ["\ufeff"]},
        {"a": "x"},
        (
            _replaced("/spec/a", '"\\uFEFF\\x62\\x6F\\x6D\\x20\\x74\\x65\\x78\\x74"', "x")
            + _removed("/spec/b", '    "\\uFEFF\\x6B": "v\\uFEFF"\n')
            + _removed("/spec/c", '  - "\\uFEFF"\n')
        ),
        "9a9675ee13a7ff593b2288bf26baccc1",
    ),
    (
        "special-chars",
        {
            "a": "nel\x85x",
            "b": "nbsp\xa0x",
            "c": "ls\u2028x",
            "d": "esc\x1bx",
            "e": 'back\\slash "quoted"',
            "f": "🙂",
            "g": "trailing ",
            "h": "a #b",
        },
        {"a": "x"},
        (
            _replaced("/spec/a", '"nel\\Nx"', "x")
            + _removed("/spec/b", "nbsp\xa0x")
            + "- type: test\n  path: /spec/c\n  value: 'ls\u2028    x'\n"
            + "- type: remove\n  path: /spec/c\n"
            + _removed("/spec/d", '"esc\\ex"')
            + _removed("/spec/e", 'back\\slash "quoted"')
            + _removed("/spec/f", '"\\U0001F642"')
            + _removed("/spec/g", "'trailing '")
            + _removed("/spec/h", "'a #b'")
        ),
        "759f43591887c79de545141608c19c5e",
    ),
    (
        "big-numbers",
        {"a": 9007199254740993, "b": 18446744073709552000, "c": -5, "d": 1e21, "e": 123456.5, "f": 4611686018427387904},
        {"a": 9007199254740992, "b": 18446744073709552000, "c": -5, "d": 1e21, "e": 123456},
        (
            _replaced("/spec/a", "9007199254740993", "9.007199254740992e+15")
            + _replaced("/spec/e", "123456.5", "123456")
            + _removed("/spec/f", "4611686018427387904")
        ),
        "4a0f9205e2358ebd7f4ac8cf6688be79",
    ),
]

# (name, left, right, kapp's MinimalString, kapp's MD5): what kapp recorded after creating these objects on
# kube-apiserver v1.34 (server defaults, allocated fields, merged stringData), reduced to the differing top-level keys.
KIND_CASES: list[Case] = [
    (
        "service/web",
        {
            "spec": {
                "clusterIP": "10.96.224.161",
                "clusterIPs": ["10.96.224.161"],
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "sessionAffinity": "None",
                "type": "ClusterIP",
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "ports": [{"port": 80, "targetPort": 8080}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "clusterIP": "10.96.224.161",
            },
            "metadata": {},
        },
        (
            _removed("/metadata/annotations", "{}")
            + _removed("/spec/clusterIPs", "  - 10.96.224.161\n")
            + _removed("/spec/internalTrafficPolicy", "Cluster")
            + _removed("/spec/ipFamilies", "  - IPv4\n")
            + _removed("/spec/ipFamilyPolicy", "SingleStack")
            + _removed("/spec/ports/0/protocol", "TCP")
            + _removed("/spec/sessionAffinity", "None")
            + _removed("/spec/type", "ClusterIP")
        ),
        "cbfab31e5ddb1de97b366c14b5a3f3c9",
    ),
    (
        "service/web-nodeport",
        {
            "spec": {
                "clusterIP": "10.96.39.153",
                "clusterIPs": ["10.96.39.153"],
                "externalTrafficPolicy": "Cluster",
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{"nodePort": 32163, "port": 80, "protocol": "TCP", "targetPort": 80}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "sessionAffinity": "None",
                "type": "NodePort",
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "ports": [{"port": 80}],
                "selector": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"},
                "type": "NodePort",
                "clusterIP": "10.96.39.153",
            },
            "metadata": {},
        },
        (
            _removed("/metadata/annotations", "{}")
            + _removed("/spec/clusterIPs", "  - 10.96.39.153\n")
            + _removed("/spec/externalTrafficPolicy", "Cluster")
            + _removed("/spec/internalTrafficPolicy", "Cluster")
            + _removed("/spec/ipFamilies", "  - IPv4\n")
            + _removed("/spec/ipFamilyPolicy", "SingleStack")
            + _removed("/spec/ports/0/nodePort", "32163")
            + _removed("/spec/ports/0/protocol", "TCP")
            + _removed("/spec/ports/0/targetPort", "80")
            + _removed("/spec/sessionAffinity", "None")
        ),
        "392ec9d3b8406dbb8304946893f2496c",
    ),
    (
        "secret/creds",
        {"data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="}, "metadata": {"annotations": {}}},
        {"data": {"user": "YWRtaW4="}, "stringData": {"password": "hunter2"}, "metadata": {}},
        (
            _removed("/data/password", "aHVudGVyMg==")
            + _removed("/metadata/annotations", "{}")
            + _added("/stringData", "    password: hunter2\n")
        ),
        "232aa423222ba2b54602308272acd053",
    ),
    (
        "statefulset/db",
        {
            "spec": {
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "podManagementPolicy": "OrderedReady",
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "db", "kapp.k14s.io/app": "1795465498845058242"}},
                "serviceName": "db",
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "db",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.839f8c9b65b28c03e06086c7cb0055bf",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/db:1",
                                "imagePullPolicy": "IfNotPresent",
                                "name": "db",
                                "resources": {},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                            }
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "restartPolicy": "Always",
                        "schedulerName": "default-scheduler",
                        "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                    },
                },
                "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"},
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "db", "kapp.k14s.io/app": "1795465498845058242"}},
                "serviceName": "db",
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "db",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.839f8c9b65b28c03e06086c7cb0055bf",
                        }
                    },
                    "spec": {"containers": [{"image": "registry.invalid/db:1", "name": "db"}]},
                },
            },
            "metadata": {},
        },
        (
            _removed("/metadata/annotations", "{}")
            + _removed(
                "/spec/persistentVolumeClaimRetentionPolicy", "    whenDeleted: Retain\n    whenScaled: Retain\n"
            )
            + _removed("/spec/podManagementPolicy", "OrderedReady")
            + _removed("/spec/revisionHistoryLimit", "10")
            + _removed("/spec/template/spec/containers/0/imagePullPolicy", "IfNotPresent")
            + _removed("/spec/template/spec/containers/0/resources", "{}")
            + _pod_defaults()
            + _removed("/spec/updateStrategy", "    rollingUpdate:\n      partition: 0\n    type: RollingUpdate\n")
        ),
        "7f06aaec2216c397fd4bab9356cfa546",
    ),
    (
        "job/once",
        {
            "spec": {
                "backoffLimit": 6,
                "completionMode": "NonIndexed",
                "completions": 1,
                "manualSelector": False,
                "parallelism": 1,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {
                    "matchLabels": {"batch.kubernetes.io/controller-uid": "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535"}
                },
                "suspend": False,
                "template": {
                    "metadata": {
                        "labels": {
                            "batch.kubernetes.io/controller-uid": "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535",
                            "batch.kubernetes.io/job-name": "once",
                            "controller-uid": "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535",
                            "job-name": "once",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.a2025bae79b8689b1ad51dc773a43555",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/once:1",
                                "imagePullPolicy": "IfNotPresent",
                                "name": "once",
                                "resources": {},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                            }
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "restartPolicy": "Never",
                        "schedulerName": "default-scheduler",
                        "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                    },
                },
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "template": {
                    "metadata": {
                        "labels": {
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.a2025bae79b8689b1ad51dc773a43555",
                        }
                    },
                    "spec": {
                        "containers": [{"image": "registry.invalid/once:1", "name": "once"}],
                        "restartPolicy": "Never",
                    },
                }
            },
            "metadata": {},
        },
        (
            _removed("/metadata/annotations", "{}")
            + _removed("/spec/backoffLimit", "6")
            + _removed("/spec/completionMode", "NonIndexed")
            + _removed("/spec/completions", "1")
            + _removed("/spec/manualSelector", "false")
            + _removed("/spec/parallelism", "1")
            + _removed("/spec/podReplacementPolicy", "TerminatingOrFailed")
            + _removed(
                "/spec/selector",
                "    matchLabels:\n      batch.kubernetes.io/controller-uid: 34ab7857-0ee6-4daf-a5f4-4d1b08ffa535\n",
            )
            + _removed("/spec/suspend", "false")
            + _removed(
                "/spec/template/metadata/labels/batch.kubernetes.io~1controller-uid",
                "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535",
            )
            + _removed("/spec/template/metadata/labels/batch.kubernetes.io~1job-name", "once")
            + _removed("/spec/template/metadata/labels/controller-uid", "34ab7857-0ee6-4daf-a5f4-4d1b08ffa535")
            + _removed("/spec/template/metadata/labels/job-name", "once")
            + _removed("/spec/template/spec/containers/0/imagePullPolicy", "IfNotPresent")
            + _removed("/spec/template/spec/containers/0/resources", "{}")
            + _pod_defaults(restart_policy=False)
        ),
        "91a1f3aa4a1d3424bed14b8c93b3cf25",
    ),
    (
        "deployment/web",
        {
            "spec": {
                "progressDeadlineSeconds": 600,
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"}},
                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "web",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.8d2a566430489a1ba6a094af78c0670e",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/app:1",
                                "imagePullPolicy": "IfNotPresent",
                                "name": "app",
                                "resources": {"limits": {"cpu": "500m", "memory": "1M"}},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                            }
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "restartPolicy": "Always",
                        "schedulerName": "default-scheduler",
                        "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                    },
                },
            },
            "metadata": {"annotations": {}},
        },
        {
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web", "kapp.k14s.io/app": "1795465498845058242"}},
                "template": {
                    "metadata": {
                        "labels": {
                            "app": "web",
                            "kapp.k14s.io/app": "1795465498845058242",
                            "kapp.k14s.io/association": "v1.8d2a566430489a1ba6a094af78c0670e",
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "image": "registry.invalid/app:1",
                                "name": "app",
                                "resources": {"limits": {"cpu": 0.5, "memory": 1000000}},
                            }
                        ]
                    },
                },
            },
            "metadata": {},
        },
        (
            _removed("/metadata/annotations", "{}")
            + _removed("/spec/progressDeadlineSeconds", "600")
            + _removed("/spec/revisionHistoryLimit", "10")
            + _removed(
                "/spec/strategy",
                "    rollingUpdate:\n      maxSurge: 25%\n      maxUnavailable: 25%\n    type: RollingUpdate\n",
            )
            + _removed("/spec/template/spec/containers/0/imagePullPolicy", "IfNotPresent")
            + _replaced("/spec/template/spec/containers/0/resources/limits/cpu", "500m", "0.5")
            + _replaced("/spec/template/spec/containers/0/resources/limits/memory", "1M", "1e+06")
            + _pod_defaults()
        ),
        "9121b1cb68807f336097b6fc0d5d736c",
    ),
    (
        "widget/gadget",
        {"spec": {"ratio": 1.5, "size": 3, "tags": ["a", "b"]}, "metadata": {"annotations": {}}},
        {"spec": {"ratio": 1.5, "tags": ["a", "b"]}, "metadata": {}},
        _removed("/metadata/annotations", "{}") + _removed("/spec/size", "3"),
        "146c7dc7396bf2012ae47cb080c3fd56",
    ),
]


def _objects(case: Case) -> tuple[str, dict[str, Any], dict[str, Any], str, str]:
    name, left, right, text, md5 = case
    return name, {"spec": left}, {"spec": right}, text, md5


ALL_CASES = [_objects(case) for case in SPEC_CASES] + KIND_CASES
IDS = [case[0] for case in ALL_CASES]


@pytest.mark.parametrize(("name", "left", "right", "text", "md5"), ALL_CASES, ids=IDS)
def test_minimal_string_and_md5_are_kapps(
    name: str, left: dict[str, Any], right: dict[str, Any], text: str, md5: str
) -> None:
    assert hashlib.md5(text.encode()).hexdigest() == md5  # the recorded text is the one kapp hashed
    assert minimal_string(ops_diff(left, right)) == text
    assert fingerprint(left, right) == md5


@pytest.mark.parametrize(("name", "left", "right", "text", "md5"), ALL_CASES, ids=IDS)
def test_the_emitter_path_writes_the_same_text(
    name: str, left: dict[str, Any], right: dict[str, Any], text: str, md5: str
) -> None:
    """Most documents are written directly; the rest go through libyaml's emitter. Both must give kapp's text."""
    ops = ops_diff(left, right)
    if ops:
        assert _emit_ops(ops) == text


def test_identical_subtrees_are_skipped_without_changing_the_result() -> None:
    shared = {"managedFields": [{"manager": "kapp", "fieldsV1": {"f:data": {}}}], "name": "x"}
    left = {"metadata": shared, "data": {"a": "1"}}
    right = {"metadata": shared, "data": {"a": "2"}}
    assert fingerprint(left, right) == fingerprint({**left, "metadata": dict(shared)}, right)
