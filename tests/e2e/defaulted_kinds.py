"""Manifests of objects the API server stores otherwise than they were sent (defaults, allocated IPs and ports,
stringData merged into data), shared by the tests that a redeploy of them shows no change (test_redeploy_unchanged)
and that kapp and kapply read each other's last-applied copies of them (test_kapp_md5). Each is YAML without a
leading `---` or braces, to be joined into a manifest that may still be formatted."""

SECRET = """
apiVersion: v1
kind: Secret
metadata:
  name: creds
type: Opaque
data:
  user: YWRtaW4=
stringData:
  password: hunter2
"""

SERVICES = """
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: web-nodeport
spec:
  type: NodePort
  selector:
    app: web
  ports:
  - port: 80
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: once
        image: registry.invalid/once:1
"""


def role_and_binding(account: str) -> str:
    """A Role that reads ConfigMaps, bound to the service account `account`."""
    return f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: reader
subjects:
- kind: ServiceAccount
  name: {account}
"""
