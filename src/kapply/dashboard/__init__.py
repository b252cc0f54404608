"""`kapply dashboard`: a local web page of the Apps and PackageInstalls the user can list, kept current by one watch
per kind, each App's status, resources, drift and history, and the actions the user's RBAC allows (docs/dashboard.md).
A user of the public API (kapply.api) and of the cluster client's `list_then_watch`."""
