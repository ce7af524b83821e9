"""An example and the exit codes at the end of every command's `--help` (the ones a command module does not
give itself: `plan`, `apply`, `undo`, `redo`, `tui` carry their own)."""

from __future__ import annotations

import argparse
from typing import Any

READ = "exit codes: 0 done; 2 bad input or usage (a name not found, a bad selector); 4 not permitted"
EXAMPLES: dict[str, str] = {
    "init": "examples:\n  gpuadmin --state /srv/gpuadmin init --from sample-inventories/oci-h100.yaml\n"
            "  gpuadmin --state /srv/gpuadmin init --from-cluster kubernetes --context oke-prod\n"
            "  gpuadmin --state /srv/gpuadmin init --from-cluster vcenter --server https://vcenter.example.com\n\n"
            "exit codes: 0 created (from a cluster: what it breaks of the rules is a warning); 1 the inventory "
            "breaks a rule; 2 bad input (file:line:column, a bad kubeconfig, a bad --server, no vCenter password), "
            "or a state already there (--force replaces it), or --shared on a directory of another user's; 3 the "
            "cluster unreachable (a vCenter certificate that does not verify); 4 not permitted (init needs an "
            "admin; a 403 from the API server; a vCenter login refused; a read-only file system); 74 the disk "
            "failed (full)",
    "validate": "example:\n  gpuadmin validate sample-inventories/*.yaml docs/examples/repartition.yaml\n\n"
                "exit codes: 0 every file is valid; 1 an inventory breaks a rule; 2 a file is malformed "
                "(file:line:column)",
    "get": "examples:\n  gpuadmin get nodes\n  gpuadmin get gpus -l pool=mig -o wide\n"
           "  gpuadmin get jobs -l 'status=pending,queue in (research,interns)' -o json\n"
           "  gpuadmin get journal -o wide\n\n" + READ,
    "describe": "examples:\n  gpuadmin describe gpu gpu-h100-07/0\n  gpuadmin describe entry 2 -o json\n\n" + READ,
    "schedule": "example:\n  gpuadmin schedule --dry-run          bind what fits, explain the rest\n"
                "  gpuadmin schedule --yes --wait 30\n\n"
                "exit codes: 0 done (or nothing to place); 1 refused by a rule; 3 stale or lock held; "
                "4 not permitted; 130 not confirmed",
    "explain": "example:\n  gpuadmin explain eval-405b-shard -o json\n\n" + READ,
    "import": "examples:\n  gpuadmin import nvidia-smi node7.xml --node gpu-h100-07 > import.yaml\n"
              "  gpuadmin import kube-nodes nodes.json --apply --yes\n\n"
              "exit codes: 0 done; 1 refused by a rule (--apply); 2 bad input (file:line); 3 stale or lock held; "
              "4 not permitted",
    "export": "examples:\n  gpuadmin export mig-parted > config.yaml\n"
              "  gpuadmin export device-plugin | kubectl apply -f -\n\n"
              "exit codes: 0 done (an export with nothing in it says so on stderr); 1 written, but it holds something "
              "its consumer refuses (left out; the warning names it, with an id like "
              "export.device-plugin.compute-instances); 2 bad input; 4 not permitted",
    "whoami": "example:\n  gpuadmin --state /srv/gpuadmin whoami\n\nexit codes: 0 done; 2 bad input",
}


def add_examples(sub: argparse._SubParsersAction[Any]) -> None:
    """Give every command without an epilog its example and exit codes (subcommands of `import` too)."""
    for name, parser in sub.choices.items():
        if parser.epilog is None and name in EXAMPLES:
            parser.epilog = EXAMPLES[name]
            parser.formatter_class = argparse.RawDescriptionHelpFormatter
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    if child.epilog is None:
                        child.epilog = EXAMPLES.get(name)
                        child.formatter_class = argparse.RawDescriptionHelpFormatter
