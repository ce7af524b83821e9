"""The live Kubernetes cluster (issue 22): what gpuadmin reads from and does to it."""
