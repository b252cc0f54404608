"""Redeploying unchanged manifests reports 0 changes for every kind kapp's default rules cover:
server defaults, allocated fields (clusterIP, nodePort, volumeName) and controller-written fields
never show up as differences."""

from __future__ import annotations

import re

import pytest

from tests.e2e.defaulted_kinds import JOB, SECRET, SERVICES, role_and_binding
from tests.e2e.harness import WAIT_INTERVAL

pytestmark = pytest.mark.e2e

POD_TEMPLATE = """
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: app
        image: registry.invalid/app:1
        ports:
        - containerPort: 8080
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
"""

MANIFESTS = {
    "namespace": """
apiVersion: v1
kind: Namespace
metadata:
  name: {namespace}-extra
""",
    "configmap": """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: "1"
  b: text
""",
    "secret": SECRET,
    "serviceaccount": """
apiVersion: v1
kind: ServiceAccount
metadata:
  name: robot
""",
    "services": SERVICES,
    "deployment": """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:"""
    + POD_TEMPLATE.format(name="web"),
    "statefulset": """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels:
      app: db
  template:"""
    + POD_TEMPLATE.format(name="db"),
    "daemonset": """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels:
      app: agent
  template:"""
    + POD_TEMPLATE.format(name="agent"),
    "job": JOB,
    "cronjob": """
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: nightly
            image: registry.invalid/nightly:1
""",
    "hpa": """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 80
""",
    "ingress": """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
  - host: web.example.test
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
""",
    "pvc": """
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
""",
    "rbac": role_and_binding("default")
    + """---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {namespace}-reader
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {namespace}-reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {namespace}-reader
subjects:
- kind: ServiceAccount
  name: default
  namespace: {namespace}
""",
    "crd-and-custom-resource": """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.{namespace}.example.test
spec:
  group: {namespace}.example.test
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec:
                type: string
              replicas:
                type: integer
                default: 1
---
apiVersion: {namespace}.example.test/v1
kind: CronTab
metadata:
  name: nightly
spec:
  cronSpec: "* * * * */5"
""",
}


def ops_line(output: str) -> str:
    match = re.search(r"^Op:\s+(.*)$", output, re.M)
    assert match, output
    return match.group(1).strip()


@pytest.mark.parametrize("kind", sorted(MANIFESTS))
def test_redeploying_unchanged_manifests_reports_no_changes(kind: str, kapply, namespace: str):
    manifest = MANIFESTS[kind].replace("{namespace}", namespace)
    first = kapply("deploy", "-a", kind, "-n", namespace, "-f", "-", "-y", WAIT_INTERVAL, input=manifest)
    assert first.returncode == 0, first.stdout + first.stderr
    assert ", 0 update," in ops_line(first.stdout) and "0 create" not in ops_line(first.stdout)

    again = kapply("deploy", "-a", kind, "-n", namespace, "-f", "-", "-y", "-c", WAIT_INTERVAL, input=manifest)
    assert again.returncode == 0, again.stdout + again.stderr
    assert ops_line(again.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists", again.stdout

    deleted = kapply("delete", "-a", kind, "-n", namespace, "-y", WAIT_INTERVAL)
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
