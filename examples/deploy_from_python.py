"""Deploying an app from Python with kapply's API: deploy, redeploy unchanged, change, inspect, delete.

    KUBECONFIG=~/.kube/config python examples/deploy_from_python.py NAMESPACE

Everything comes from `import kapply`. Resources are plain dicts (files work too: `files=["config/"]`).
"""

from __future__ import annotations

import sys

import kapply

APP = "hello-python"  # the app; its resources are named "hello" (an app record is a ConfigMap named like the app)


def resources(greeting: str) -> list[dict]:
    labels = {"app": "hello"}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hello"}, "data": {"greeting": greeting}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "hello"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.invalid/hello:1",
                                "envFrom": [{"configMapRef": {"name": "hello"}}],
                            }
                        ]
                    },
                },
            },
        },
    ]


def main(namespace: str) -> None:
    options = kapply.DeployOptions(wait=kapply.WaitOptions(check_interval=0.5))
    with kapply.Client(namespace=namespace) as k:
        first = k.deploy(APP, resources=resources("hello"), options=options)
        print(f"deployed: {[f'{c.apply_op} {c.describe()}' for c in first.changes]} (app-change {first.app_change})")

        again = k.plan_deploy(APP, resources=resources("hello"))
        print(f"redeploy unchanged: {len(again.changes)} changes")
        if again.pending:
            sys.exit("expected no changes on an unchanged redeploy")

        changed = k.plan_deploy(APP, resources=resources("hi"), options=options)
        print(changed.line_diffs())
        result = k.run_deploy(changed)
        print(f"changed: {[f'{c.apply_op} {c.describe()}' for c in result.changes]}")

        print(f"resources: {sorted(o['kind'] + '/' + o['metadata']['name'] for o in k.inspect(APP))}")
        print(f"history: {[change.meta.description for change in k.app_changes(APP)]}")

        try:
            k.deploy(APP, resources=[{"kind": "ConfigMap", "metadata": {"name": "no-api-version"}}])
        except kapply.ManifestError as e:
            print(f"bad input refused: {e}")

        deleted = k.delete(APP, options=kapply.DeleteOptions(wait=kapply.WaitOptions(check_interval=0.5)))
        print(f"deleted: {deleted}")


if __name__ == "__main__":
    main(sys.argv[1])
