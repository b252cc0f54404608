"""Apply: executing changes on the cluster with kapp's strategies (and, later, waiting)."""
