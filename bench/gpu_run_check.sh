#!/usr/bin/env bash
# The product on a GPU machine, as a user runs it (bench/results/run-<date>.md has what it gave).
#   bench/gpu_run_check.sh OUT_DIR STEP [STEP...]
# Steps:
#   eval-kda      `marathon eval tasks/kda --candidate kernels/kda` in the sandbox (our kernel: every
#                 input family, then timed against FLA)
#   eval-mla      `marathon eval tasks/mla --candidate kernels/mla`, sandboxed then with
#                 --unsafe-no-sandbox (the sandbox must not change the timings)
#   pytest        the harness's GPU-only tests (anti-cheat, kernel rules, MLA on two streams)
#   exploits      the GPU-only cheats (timer patching, work on a side stream, torch doing the compute,
#                 a result cache, a CUDA fault) as candidates of tasks/kda through `marathon eval`,
#                 so through the sandboxed evaluator: each must come back incorrect or with a violation
#   mcp           `marathon mcp --task tasks/mla`: evaluate and profile our kernel over MCP (stdio)
#   run-TASK      bench/run_resume.py on tasks/TASK (search policy, SIGKILLed and resumed), then
#                 `marathon report` (RUN_CALLS and RUN_DEADLINE_S set its budget)
# Needs .dist (scripts/bundle-binary: marathon, its libraries and bwrap) and, for KDA's baseline,
# the FLA wheels in .whl. Evaluations share one Triton cache (TRITON_CACHE_DIR, made writable in the
# sandbox with MARATHON_SANDBOX_RW) so that FLA's autotuning is paid once per machine: an
# operator's choice that lets a candidate write into a cache later evaluations read
# (docs/security.md); the candidates here are the search policy's configurations of the starter.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
mkdir -p "$out"
export PATH=$PWD/.dist:$PATH PYTHONUNBUFFERED=1 MARATHON_PYTHON
MARATHON_PYTHON=$(command -v python3)
if compgen -G ".whl/*.whl" >/dev/null && [ ! -d /opt/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /opt/site .whl/*.whl
fi
[ -d /opt/site ] && export PYTHONPATH=/opt/site
mkdir -p /opt/tcache
export TRITON_CACHE_DIR=/opt/tcache TRITON_CACHE_AUTOTUNING=1 MARATHON_SANDBOX_RW=/opt/tcache
echo "== $(marathon --version); $(bwrap --version); $(nvidia-smi -L); $(date -u +%FT%TZ)"

summary() {
  python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
res = r.get('result', r)
keep = {k: res.get(k) for k in ('correct', 'score', 'baseline_score', 'violations', 'status')}
keep['timed'] = [{k: d.get(k) for k in ('shape', 'ms', 'baseline_ms', 'speedup', 'floor_fraction')}
                 for d in res.get('details', []) if d.get('ms') is not None]
print(json.dumps(keep))" "$1" 2>&1 | head -c 3000
  echo
}

for step in "$@"; do
  t0=$(date +%s)
  echo "== $step"
  case $step in
  eval-kda)
    timeout 400 marathon eval tasks/kda --candidate kernels/kda --json >"$out/eval-kda.json"
    echo "exit $?"
    summary "$out/eval-kda.json"
    ;;
  eval-mla)
    for mode in sandboxed unsandboxed; do
      flag=()
      [ $mode = unsandboxed ] && flag=(--unsafe-no-sandbox)
      timeout 200 marathon eval tasks/mla --candidate kernels/mla --json "${flag[@]}" >"$out/eval-mla-$mode.json"
      echo "$mode: exit $?"
      summary "$out/eval-mla-$mode.json"
    done
    ;;
  pytest)
    # TRITON_INTERPRET=0: the tests' conftest defaults to the interpreter (CI's CPU path).
    TRITON_INTERPRET=0 timeout 240 python3 -m pytest -q -rs tests/python/test_exploits.py tests/python/test_kernel_rules.py \
      tests/python/test_kernels_mla.py -k "not float32_reference" 2>&1 | tail -25
    ;;
  exploits)
    # Each exploit wraps a correct kernel it imports as `base` (the KDA starter), as
    # tests/python/conftest.py builds them: without it the candidate is only an import error.
    for x in timer_tampering other_stream torch_compute cached cuda_fault; do
      cand=$(mktemp -d)
      cp "tests/python/exploits/$x/"* "$cand/" && cp tasks/kda/starter/kernel.py "$cand/base.py"
      timeout 300 marathon eval tasks/kda --candidate "$cand" --json >"$out/exploit.json"
      echo "$x: exit $? $(python3 -c "
import json, sys
r = json.load(open(sys.argv[1])); r = r.get('result', r)
print({k: r.get(k) for k in ('status', 'correct', 'score', 'violations')}, '| log:', r.get('log', '')[-400:])" "$out/exploit.json" 2>&1 | head -c 1200)"
      rm -rf "$cand"
    done
    rm -f "$out/exploit.json"
    ;;
  mcp)
    timeout 300 python3 - "$out" <<'EOF'
import json, subprocess, sys, pathlib
out = pathlib.Path(sys.argv[1])
p = subprocess.Popen(["marathon", "mcp", "--task", "tasks/mla", "--run-dir", str(out / "mcp-run")],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n = 0
def call(method, params=None, note=False):
    global n
    msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if not note:
        n += 1
        msg["id"] = n
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    if note:
        return None
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("id") == n:
            return r
call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "gpu_run_check", "version": "1"}})
call("notifications/initialized", note=True)
files = {f: pathlib.Path("kernels/mla", f).read_text() for f in ("kernel.py", "decode_gluon.py", "reference.py")}
for name, args in (("evaluate", {"files": files, "strategy": "our kernel, over MCP"}),
                   ("evaluate", {"files": files, "strategy": "the same again (cache)"}),
                   ("profile", {})):
    r = call("tools/call", {"name": name, "arguments": args})
    res = r.get("result", {})
    text = "".join(c.get("text", "") for c in res.get("content", []))
    print(name, "isError" if res.get("isError") else "ok", text[:1500].replace("\n", " | "))
p.stdin.close(); p.wait(timeout=60)
EOF
    echo "exit $?"
    ;;
  run-*)
    task=${step#run-}
    timeout $((${RUN_DEADLINE_S:-420} + 90)) python3 bench/run_resume.py --marathon "$(command -v marathon)" \
      --task "tasks/$task" --run-dir "$out/run-$task" --max-tool-calls "${RUN_CALLS:-150}" \
      --kills 5 --eval-kills 2 --spread-s "${RUN_SPREAD_S:-60}" --deadline-s "${RUN_DEADLINE_S:-420}" --json "$out/run-$task.json" |
      grep -v '^ '
    marathon report "$out/run-$task" -o "$out/report-$task.html" && echo "report written"
    nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | sed 's/^/left: /'
    ;;
  *) echo "unknown step $step" ;;
  esac
  echo "== $step took $(($(date +%s) - t0)) s"
done
