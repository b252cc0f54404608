"""Resources: reading manifests, identifying resources, and talking to the cluster."""
