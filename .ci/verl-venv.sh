#!/usr/bin/env bash
# Build a venv with verl 0.9.1 on the CPU build of torch 2.13.0, for tests/test_launch_verl.py
# (then: SAPO_VERL_PYTHON=<venv>/bin/python python -m pytest tests/test_launch_verl.py). .ci/run calls it.
# No CUDA: torch is pinned to 2.13.0 (the +cpu wheel on this machine's disk), every nvidia-*/triton/vllm/flash-attn
# package is forbidden by an unsatisfiable constraint, and `pip install --dry-run --report` is checked before
# installing. verl's base requirements lack TransferQueue, which main_ppo's V1 TaskRunner imports, so the
# `verl-core` extra (no GPU packages in it) is installed.
# usage: .ci/verl-venv.sh VENV_DIR
set -euo pipefail
VENV="${1:?usage: .ci/verl-venv.sh VENV_DIR}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/constraints.txt" <<'EOF'
# Pin the CPU torch that lies on local disk; forbid every CUDA/GPU-only package.
torch==2.13.0
nvidia-cublas<0
nvidia-cublas-cu12<0
nvidia-cuda-cupti<0
nvidia-cuda-cupti-cu12<0
nvidia-cuda-nvrtc<0
nvidia-cuda-nvrtc-cu12<0
nvidia-cuda-runtime<0
nvidia-cuda-runtime-cu12<0
nvidia-cudnn-cu12<0
nvidia-cudnn-cu13<0
nvidia-cufft<0
nvidia-cufft-cu12<0
nvidia-cufile<0
nvidia-cufile-cu12<0
nvidia-curand<0
nvidia-curand-cu12<0
nvidia-cusolver<0
nvidia-cusolver-cu12<0
nvidia-cusparse<0
nvidia-cusparse-cu12<0
nvidia-cusparselt-cu12<0
nvidia-cusparselt-cu13<0
nvidia-nccl-cu12<0
nvidia-nccl-cu13<0
nvidia-nvjitlink<0
nvidia-nvjitlink-cu12<0
nvidia-nvshmem-cu12<0
nvidia-nvshmem-cu13<0
nvidia-nvtx<0
nvidia-nvtx-cu12<0
nvidia-ml-py<0
triton<0
vllm<0
sglang<0
flash-attn<0
cupy-cuda13x<0
transformer-engine<0
EOF

cat > "$WORK/lock.txt" <<'EOF'
verl[verl-core]==0.9.1
absl-py==2.5.1
accelerate==1.15.0
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiohttp-cors==0.8.1
aiosignal==1.4.0
annotated-doc==0.0.7
annotated-types==0.8.0
antlr4-python3-runtime==4.9.3
anyio==4.16.0
attrs==26.1.0
av==18.1.0
cachetools==8.0.2
certifi==2026.10.19.post1
cffi==2.1.1
charset-normalizer==3.5.3
click==8.5.1
cloudpickle==3.1.3
codetiming==1.4.0
colorful==0.5.8
cryptography==50.0.2
cwevals==0.0.1b1
datasets==5.2.0
dill==0.4.1
distlib==0.4.4
distro==1.9.0
fastapi==0.165.0
filelock==4.3.1
frozenlist==1.8.0
fsspec==2026.9.0
google-api-core==2.44.0
google-auth==2.63.0
googleapis-common-protos==1.76.0
grpcio==1.85.3
h11==0.16.0
hf-xet==1.8.0
httpcore==1.0.9
httpx==0.28.1
huggingface_hub==1.33.0
hydra-core==1.3.8
idna==3.20
importlib_metadata==10.2.0
iniconfig==2.3.1
Jinja2==3.1.6
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
lazy-importer==0.1.0
Markdown==3.11.3
markdown-it-py==4.3.0
MarkupSafe==3.0.4
mathruler==0.1.0
mdurl==0.1.2
mpmath==1.3.0
msgpack==1.2.4
msgspec==0.23.0
multidict==7.2.1
multiprocess==0.70.19
networkx==3.6.1
numpy==2.4.6
nvtx==0.2.17
omegaconf==2.3.1
opencensus==0.11.4
opencensus-context==0.1.3
opentelemetry-api==1.45.2
opentelemetry-exporter-http-transport==0.66b2
opentelemetry-exporter-otlp-common==0.66b2
opentelemetry-exporter-otlp-proto-common==1.45.2
opentelemetry-exporter-otlp-proto-http==1.45.2
opentelemetry-exporter-prometheus==0.66b2
opentelemetry-proto==1.45.2
opentelemetry-sdk==1.45.2
opentelemetry-semantic-conventions==0.66b2
orjson==3.13.0
packaging==25.0
pandas==3.1.1
peft==0.21.2
pillow==13.0.0
platformdirs==4.14.9
pluggy==1.7.0
prometheus_client==0.26.0
propcache==0.5.4
proto-plus==1.29.0
protobuf==7.36.2
psutil==7.2.2
py-spy==0.4.3
pyarrow==26.0.1
pyasn1==0.6.5
pyasn1_modules==0.4.2
pybind11==3.1.0
pycparser==3.12
pydantic==2.14.4
pydantic_core==2.50.5
Pygments==2.21.0
pylatexenc==2.11
pytest==9.2.0
pytest-asyncio==1.5.0
pytest-rerunfailures==16.7
python-dateutil==4.0.0
python-discovery==1.9.6
pyvers==0.1.0
PyYAML==6.0.4
pyzmq==27.3.0
qwen-vl-utils==0.0.14
ray==2.60.0
referencing==0.37.0
regex==2026.11.19
requests==2.34.2
rich==15.0.0
rpds-py==2026.9.1
safetensors==0.8.0
setuptools==84.2.1
shellingham==1.5.4
six==1.17.0
smart_open==9.0.2
sniffio==1.3.1
starlette==1.10.0
sympy==1.14.0
tensorboard==2.21.0
tensorboard-data-server==0.7.2
tensordict==0.10.0
tokenizers==0.22.2
torchcodec==0.17.0
torchdata==0.11.0
tqdm==4.70.1
TransferQueue==0.1.11
transformers==5.10.4
typer==0.29.2
typing-inspection==0.4.5
typing_extensions==4.16.0
tzdata==2026.6
urllib3==2.8.0
uvicorn==0.54.0
virtualenv==21.14.5
wandb==0.31.0
Werkzeug==3.1.9
wrapt==2.5.2
xxhash==4.1.0
yarl==1.25.1
zipp==4.1.2
EOF

start=$(date +%s)
python3 -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install --quiet torch==2.13.0 -c "$WORK/constraints.txt"
"$PY" -c 'import torch, sys; v = torch.__version__; print("torch", v); sys.exit(0 if v.endswith("+cpu") else "not the CPU build of torch: " + v)'

# Refuse to go on if the resolver would bring anything CUDA-flavoured.
"$PY" -m pip install --quiet --dry-run --report "$WORK/report.json" -r "$WORK/lock.txt" -c "$WORK/constraints.txt"
"$PY" - "$WORK/report.json" <<'EOF'
import json, re, sys
names = [i["metadata"]["name"] + "==" + i["metadata"]["version"] for i in json.load(open(sys.argv[1]))["install"]]
bad = [n for n in names if re.match(r"(?i)(nvidia|cupy|triton|vllm|sglang|flash[-_]attn|transformer[-_]engine|torch==)", n)]
print(len(names), "packages to install")
sys.exit("CUDA/GPU packages in the plan: " + ", ".join(bad) if bad else 0)
EOF

"$PY" -m pip install --quiet -r "$WORK/lock.txt" -c "$WORK/constraints.txt"
"$PY" -m pip check
"$PY" -c 'import importlib.metadata as m, torch; print("verl", m.version("verl"), "torch", torch.__version__, "cuda", torch.cuda.is_available())'
echo "install time: $(( $(date +%s) - start ))s; size: $(du -sh "$VENV" | cut -f1)"
