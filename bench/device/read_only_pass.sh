#!/bin/bash
# One read-only pass of gpuadmin on a lent GPU machine (docs/telemetry.md, "On a real GPU"), from the checkout with
# `make probe-site` carried: `bash bench/device/read_only_pass.sh` there, everything it records under $OUT.
# Nothing here changes a GPU's setting, clock, persistence, ECC or MIG mode: nvidia-smi and NVML are only read; a
# process of the image's PyTorch holds ~2.6 GiB of GPU memory for 90 s so that the processes column has a holder.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=$PWD/.probe-site:$PWD PYTHONUNBUFFERED=1
export XDG_STATE_HOME=$(mktemp -d) XDG_CONFIG_HOME=$(mktemp -d)
unset GPUADMIN_STATE
P="python3 -s"
G() { echo "\$ gpuadmin $*" >&2; timeout 120 $P -c 'import sys; from gpuadmin.cli.main import main; sys.exit(main())' "$@"; echo "[rc=$?]" >&2; }
{ date -u; python3 --version; nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,mig.mode.current,memory.total,ecc.mode.current --format=csv; } > "$OUT/env.txt" 2>&1
nvidia-smi -q -x > "$OUT/nvidia-smi-q.xml" 2>> "$OUT/env.txt"
python3 -c 'import torch,time; x=torch.ones(1<<28, device="cuda"); torch.cuda.synchronize(); time.sleep(90)' \
  > "$OUT/holder.txt" 2>&1 &
holder=$!
sleep 15
{ echo "holder pid $holder"; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv; } >> "$OUT/env.txt" 2>&1
timeout 120 $P -m bench.device.nvml_probe --repeat 50 > "$OUT/probe.txt" 2>&1; echo "[rc=$?]" >> "$OUT/probe.txt"
timeout 60 $P -m bench.device.nvml_probe --repeat 5 --json > "$OUT/probe.json" 2>> "$OUT/probe.txt"
{
  G import local -o inventory --cluster probe > "$OUT/inventory.yaml"; cat "$OUT/inventory.yaml" >&2
  G init --from "$OUT/inventory.yaml"
  G config set metrics.source nvml
  G get nodes; G top -o wide; G get gpus -o wide; G top -o json
  G import nvidia-smi "$OUT/nvidia-smi-q.xml" --node probe-xml -o inventory
  G tui --screenshot "$OUT/console.svg"
} > "$OUT/cli.txt" 2>&1
kill "$holder" 2>/dev/null; wait
echo "read_only_pass: done, in $OUT"
