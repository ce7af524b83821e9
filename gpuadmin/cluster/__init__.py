"""gpuadmin on a live Kubernetes cluster (issue 22): connect, read, watch, and execute checked changes through the
cluster's own control plane. The Kubernetes client (lightkube, the `kube` extra) is imported only inside the functions
that talk to a cluster, so nothing else pays for it (tests/test_architecture_kube_client.py)."""
