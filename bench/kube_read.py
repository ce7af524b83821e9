"""The read half of a sync, alone (bench/bench_kube_sync.py runs it as its own process): list every Node, Pod and
KAI Queue of the cluster a kubeconfig names with lightkube, in pages of `page`, and print how many.

    python -m bench.kube_read KUBECONFIG [PAGE]
"""

from __future__ import annotations

import sys


def main(kubeconfig: str, page: int) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.generic_resource import create_global_resource
    from lightkube.resources.core_v1 import Node, Pod

    queue = create_global_resource("scheduling.run.ai", "v2", "Queue", "queues")
    client = Client(config=KubeConfig.from_file(kubeconfig))
    counts = {"nodes": sum(1 for _ in client.list(Node, chunk_size=page)),
              "pods": sum(1 for _ in client.list(Pod, namespace="*", chunk_size=page)),
              "queues": sum(1 for _ in client.list(queue, chunk_size=page))}
    print(" ".join(f"{n} {what}" for what, n in counts.items()))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 500)
