"""kapply: deploy applications to Kubernetes with exact diffs (kapp-compatible)."""

__version__ = "0.1.0"
