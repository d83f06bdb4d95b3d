#!/usr/bin/env python3
"""baton against its peers on one machine, in one run: JSON lines out, the last one the summary.

  bench/speed_bench.py --baton build-torch2/bin/baton --python .venv-peers/bin/python --device cuda
  bench/speed_bench.py --baton build-torch2/bin/baton --python .venv-peers/bin/python --device cpu --quick

FashionCNN (recipes/fashion_mnist.yaml, batch 128, the recipe of bench/peers/pytorch_fashion.py):
  samples/s over --steps steps: baton eager fp32 and amp_bf16 (cuda_graphs=off), and on a GPU from CUDA
  graphs (cuda_graphs=on) fp32 and amp_bf16, with the speed monitor's figure beside the run's; PyTorch eager (fp32, bf16),
  PyTorch torch.compile(mode="reduce-overhead"), Lightning, Composer. The time-to-accuracy rows train until 91% test
  accuracy (evaluated every 100 steps, evaluation excluded from the training time) and give the
  training time to it and the wall time from process start to it (start-up, compilation, warm-up
  and evaluations included; for baton the whole process, which ends at the target), for the peer's
  recipe and for baton's recipes/fashion_mnist_fast.yaml (the same model with training methods).
gpt (recipes/gpt_char.yaml, batch 64, context 256): tokens/s over the steps after the 20th (baton: the
  speed monitor's window, set to them; the peer: its timed steps) and the validation loss after the
  same steps; baton, bench/peers/gpt_char.py eager and with torch.compile.
Peers run with --python (the same torch as baton's LibTorch 2.x build: .venv-peers,
bench/peers/make-venv.sh). A row that fails is reported with its error and the run goes on.
"""
import argparse, json, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "bench", "peers")

p = argparse.ArgumentParser()
p.add_argument("--baton", default=os.path.join(ROOT, "build-torch2", "bin", "baton"))
p.add_argument("--python", default=os.path.join(ROOT, ".venv-peers", "bin", "python"))
p.add_argument("--composer-python", default=os.path.join(ROOT, ".venv-composer", "bin", "python"),
               help="Composer's environment (bench/peers/make-venv.sh --composer); its rows are skipped without it")
p.add_argument("--device", default="cpu")
p.add_argument("--steps", type=int, default=1000, help="FashionCNN steps for samples/s")
p.add_argument("--gpt-steps", type=int, default=500)
p.add_argument("--no-tta", action="store_true", help="skip the time-to-91%% rows")
p.add_argument("--no-gpt", action="store_true")
p.add_argument("--no-compile", action="store_true", help="skip the torch.compile peers")
p.add_argument("--quick", action="store_true",
               help="a small gpt (2 layers, width 128, context 64) and 200 FashionCNN steps: a CPU's look")
a = p.parse_args()
if a.quick:
    a.steps, a.gpt_steps = min(a.steps, 200), min(a.gpt_steps, 60)
GPT_SMALL = {"layers": 2, "width": 128, "heads": 4, "context": 64} if a.quick else {}
results = []


def emit(row):
    results.append(row)
    print(json.dumps(row), flush=True)


def run(cmd, timeout=900):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"exit {out.returncode}: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    return out.stdout, wall


def last_json(text):
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def row(name, fn):
    try:
        emit({"row": name, **fn()})
    except Exception as e:  # noqa: BLE001 - one failing row must not lose the others
        emit({"row": name, "error": str(e)[:300]})


def baton(recipe, sets):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [a.baton, "train", os.path.join(ROOT, "recipes", recipe), "--run-dir", tmp + "/run", "--overwrite",
               "--set", f"device={a.device}", "--set", "progress_bar=false"]
        for s in sets:
            cmd += ["--set", s]
        _, wall = run(cmd)
        summary = json.load(open(tmp + "/run/summary.json"))
        speed = [json.loads(l) for l in open(tmp + "/run/metrics.jsonl") if "throughput/" in l]
        return summary, speed, wall


def baton_fashion(precision, graphs="off"):
    s, speed, _ = baton("fashion_mnist.yaml", [f"max_duration={a.steps}ba", "eval_interval=0", f"precision={precision}",
                                               f"cuda_graphs={graphs}"])
    monitor = [m["throughput/samples_per_sec"] for m in speed if "throughput/samples_per_sec" in m]
    out = {"samples_per_s": round(s["samples_per_s"], 1), "monitor_samples_per_s": round(monitor[-1], 1) if monitor else None,
           "steps": s["steps"], "graph_steps": s.get("graph_steps")}
    if precision == "fp32" and a.device.startswith("cuda"):  # the recipe says nothing: PyTorch's defaults, as the peers'
        out["tf32"] = "auto: convolutions TF32 (cuDNN), matmuls fp32"
    return out


def baton_fashion_tta(precision, recipe="fashion_mnist.yaml"):
    sets = [f"precision={precision}"]
    if recipe == "fashion_mnist.yaml":  # the fast recipe has its own stopper and evaluates every 25 steps
        sets += ["eval_interval=100ba", "callbacks.threshold_stopper={monitor: eval/accuracy, threshold: 0.91}"]
    s, _, wall = baton(recipe, sets)
    hit = s["metrics"].get("eval/accuracy", 0) >= 0.91
    return {"time_to_target_s": round(s["train_s"], 3) if hit else None, "wall_to_target_s": round(wall, 3) if hit else None,
            "final_test_acc": s["metrics"].get("eval/accuracy"), "steps": s["steps"]}


def peer(script, args, python=None):
    out, _ = run([python or a.python, os.path.join(PEERS, script), "--device", a.device] + args)
    j = last_json(out)
    keep = ("samples_per_s", "time_to_target_s", "wall_to_target_s", "final_test_acc", "steps", "tokens_per_sec",
            "val_loss", "torch", "lightning")
    return {k: j[k] for k in keep if k in j}


def baton_gpt():
    # The speed monitor's last window: the steps after the 20th, as the peer times them (--warmup 20).
    window = max(1, a.gpt_steps - 20)
    sets = [f"max_duration={a.gpt_steps}ba", f"eval_interval={a.gpt_steps}ba", "precision=amp_bf16",
            f"callbacks.speed_monitor={{window_size: {window}}}"]
    sets += [f"{'data' if k == 'context' else 'model'}.{k}={v}" for k, v in GPT_SMALL.items()]
    s, speed, _ = baton("gpt_char.yaml", sets)
    tokens = [m["throughput/tokens_per_sec"] for m in speed if "throughput/tokens_per_sec" in m]
    return {"tokens_per_sec": round(tokens[-1], 1) if tokens else None, "val_loss": s["metrics"].get("eval/loss"),
            "steps": s["steps"]}


def gpt_peer_args():
    args = ["--steps", str(a.gpt_steps), "--amp", "bf16"]
    for k, v in GPT_SMALL.items():
        args += [f"--{k}", str(v)]
    return args


row("fashion baton eager fp32", lambda: baton_fashion("fp32"))
row("fashion baton eager bf16", lambda: baton_fashion("amp_bf16"))
if a.device.startswith("cuda"):
    row("fashion baton graphs fp32", lambda: baton_fashion("fp32", "on"))
    row("fashion baton graphs bf16", lambda: baton_fashion("amp_bf16", "on"))
row("fashion pytorch eager fp32", lambda: peer("pytorch_fashion.py", ["--max-steps", str(a.steps)]))
row("fashion pytorch eager bf16", lambda: peer("pytorch_fashion.py", ["--max-steps", str(a.steps), "--amp", "bf16"]))
if not a.no_compile:
    row("fashion pytorch compiled fp32", lambda: peer("pytorch_fashion.py", ["--max-steps", str(a.steps), "--compile"]))
row("fashion lightning fp32", lambda: peer("lightning_fashion.py", ["--epochs", str(max(1, -(-a.steps // 468)))]))
composer = os.path.exists(a.composer_python)
if composer:
    row("fashion composer fp32",
        lambda: peer("composer_fashion.py", ["--epochs", str(max(1, -(-a.steps // 468)))], a.composer_python))
if not a.no_tta:
    row("fashion tta baton eager fp32", lambda: baton_fashion_tta("fp32"))
    row("fashion tta baton fast recipe", lambda: baton_fashion_tta("auto", "fashion_mnist_fast.yaml"))
    row("fashion tta pytorch eager fp32", lambda: peer("pytorch_fashion.py", ["--epochs", "3", "--target", "0.91"]))
    if not a.no_compile:
        row("fashion tta pytorch compiled fp32",
            lambda: peer("pytorch_fashion.py", ["--epochs", "3", "--target", "0.91", "--compile"]))
    row("fashion tta lightning fp32", lambda: peer("lightning_fashion.py", ["--epochs", "3", "--target", "0.91"]))
    if composer:
        row("fashion tta composer fp32",
            lambda: peer("composer_fashion.py", ["--epochs", "3", "--target", "0.91"], a.composer_python))
if not a.no_gpt:
    row("gpt baton bf16", baton_gpt)
    row("gpt pytorch eager bf16", lambda: peer("gpt_char.py", gpt_peer_args()))
    if not a.no_compile:
        row("gpt pytorch compiled bf16", lambda: peer("gpt_char.py", gpt_peer_args() + ["--compile"]))

by = {r["row"]: r for r in results}


def ratio(ours, theirs, key):
    x, y = by.get(ours, {}).get(key), by.get(theirs, {}).get(key)
    return round(x / y, 3) if x and y else None


print(json.dumps({"summary": True, "device": a.device, "quick": a.quick, "ratios": {
    "fashion samples/s baton graphs fp32 / pytorch eager fp32": ratio("fashion baton graphs fp32",
                                                                      "fashion pytorch eager fp32", "samples_per_s"),
    "fashion samples/s baton graphs fp32 / pytorch compiled": ratio("fashion baton graphs fp32",
                                                                    "fashion pytorch compiled fp32", "samples_per_s"),
    "fashion samples/s baton graphs fp32 / lightning": ratio("fashion baton graphs fp32", "fashion lightning fp32",
                                                             "samples_per_s"),
    "fashion samples/s baton fp32 / pytorch eager fp32": ratio("fashion baton eager fp32", "fashion pytorch eager fp32",
                                                               "samples_per_s"),
    "fashion samples/s baton fp32 / pytorch compiled": ratio("fashion baton eager fp32", "fashion pytorch compiled fp32",
                                                             "samples_per_s"),
    "fashion samples/s baton fp32 / lightning": ratio("fashion baton eager fp32", "fashion lightning fp32",
                                                      "samples_per_s"),
    "fashion samples/s baton fp32 / composer": ratio("fashion baton eager fp32", "fashion composer fp32",
                                                     "samples_per_s"),
    "fashion time to 91% baton / pytorch eager": ratio("fashion tta baton eager fp32", "fashion tta pytorch eager fp32",
                                                       "time_to_target_s"),
    "fashion time to 91% baton fast recipe / pytorch eager": ratio("fashion tta baton fast recipe",
                                                                   "fashion tta pytorch eager fp32", "time_to_target_s"),
    "fashion wall to 91% baton / pytorch compiled": ratio("fashion tta baton eager fp32",
                                                          "fashion tta pytorch compiled fp32", "wall_to_target_s"),
    "gpt tokens/s baton / pytorch eager": ratio("gpt baton bf16", "gpt pytorch eager bf16", "tokens_per_sec"),
    "gpt tokens/s baton / pytorch compiled": ratio("gpt baton bf16", "gpt pytorch compiled bf16", "tokens_per_sec"),
    "gpt val loss baton / pytorch eager": ratio("gpt baton bf16", "gpt pytorch eager bf16", "val_loss"),
}}), flush=True)
