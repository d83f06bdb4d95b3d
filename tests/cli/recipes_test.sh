#!/usr/bin/env bash
# Every recipe a user is shown runs: each file under recipes/ and bench/ (search spaces aside) and
# each recipe written in README.md and docs/*.md (a ```yaml block with model, data, optimizer or
# max_duration) is read and run with fast_dev_run, whatever its schedule. Their data are made here,
# small, and put where the recipe's paths point (images, shards, token shards, .npy files, a
# TorchScript file); batch sizes are cut to a few examples; a device a CPU machine lacks becomes
# auto, an MLflow logger is left out (no server); a model space's recipe without an architecture
# runs as one trial of a search of it. A failure names the recipe's file and line.
# Usage: recipes_test.sh BATON_BINARY SOURCE_DIR. Exit 77 without Debian's Fashion-MNIST (most
# recipes train on it).
set -uo pipefail
baton=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
  echo "skipped: no /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist; scripts/install-deps.sh)"
  exit 77
fi
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# The fixtures: images (PNG, 3 classes), WebDataset shards of them, a text, .npy files.
/usr/bin/python3 - <<'PY'
import io, os, random, struct, tarfile, zlib
import numpy as np
def png(shade, side=32):
    raw = b"".join(b"\x00" + bytes((shade + 11 * r + 5 * c + k) % 256 for c in range(side) for k in range(3)) for r in range(side))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
for split in ("train", "val"):
    for c, cls in enumerate(("ant", "bee", "cat")):
        os.makedirs(f"img/{split}/{cls}", exist_ok=True)
        for i in range(4):
            open(f"img/{split}/{cls}/{i}.png", "wb").write(png(60 * c + i))
    os.makedirs("shards", exist_ok=True)
    with tarfile.open(f"shards/{split}-000000.tar", "w") as t:
        for i in range(12):
            for name, data in ((f"s{i:03d}.png", png(20 * i)), (f"s{i:03d}.cls", str(i % 3).encode())):
                info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype(np.float32)
np.save("x.npy", x); np.save("vx.npy", x[:64])
np.save("y_classes.npy", (x[:, 0] > 0).astype(np.int64)); np.save("vy_classes.npy", (x[:64, 0] > 0).astype(np.int64))
np.save("y_values.npy", x[:, :2].sum(1)); np.save("vy_values.npy", x[:64, :2].sum(1))
words = "the quick brown fox jumps over a lazy dog and runs far away into the night".split()
random.seed(0)
open("corpus.txt", "w").write("\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(6000)))
PY
"$baton" tokenize corpus.txt --vocab-size 300 --out tokens >tokenize.log 2>&1 || fail "the token fixture: $(tail -1 tokenize.log)"
# A TorchScript file of the default data's shape: a fashion_cnn trained for a batch, exported.
"$baton" train "$src/recipes/fashion_mnist.yaml" --set max_duration=1ba --set eval_interval=0 --run-dir ts >ts.log 2>&1 &&
  "$baton" export ts/checkpoints/latest --torchscript net.pt >>ts.log 2>&1 || fail "the TorchScript fixture: $(tail -1 ts.log)"

# A Hugging Face folder (model: {name: hf}): a tiny Llama of the token fixture's 300 tokens, its
# safetensors written here (random weights).
/usr/bin/python3 - <<'PY' || fail "the Hugging Face fixture"
import array, json, os, random
os.makedirs("hf", exist_ok=True)
v, c, f = 300, 16, 32
json.dump({"architectures": ["LlamaForCausalLM"], "vocab_size": v, "hidden_size": c, "intermediate_size": f,
           "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 4096}, open("hf/config.json", "w"))
shapes = {"model.embed_tokens.weight": [v, c], "model.norm.weight": [c], "lm_head.weight": [v, c],
          "model.layers.0.input_layernorm.weight": [c], "model.layers.0.post_attention_layernorm.weight": [c],
          "model.layers.0.mlp.gate_proj.weight": [f, c], "model.layers.0.mlp.up_proj.weight": [f, c],
          "model.layers.0.mlp.down_proj.weight": [c, f]}
for p in "qkvo":
    shapes[f"model.layers.0.self_attn.{p}_proj.weight"] = [c, c]
header, blobs, at = {}, [], 0
for name, shape in shapes.items():
    n = 1
    for d in shape:
        n *= d
    blobs.append(array.array("f", [random.gauss(0, 0.02) for _ in range(n)]).tobytes())
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + 4 * n]}
    at += 4 * n
text = json.dumps(header).encode()
with open("hf/model.safetensors", "wb") as out:
    out.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))
PY

# Each recipe, its fixtures in place, as RECIPE_N.yaml with its origin in origins.txt.
/usr/bin/python3 - "$src" <<'PY'
import glob, os, re, sys, yaml
src = sys.argv[1]
here = os.getcwd()
recipes = []  # (origin, mapping)
for path in sorted(glob.glob(f"{src}/recipes/*.yaml") + glob.glob(f"{src}/bench/*.yaml")):
    text = open(path).read()
    if "_type" in text:  # a search space
        continue
    recipes.append((os.path.relpath(path, src), yaml.safe_load(text)))
for path in [f"{src}/README.md"] + sorted(glob.glob(f"{src}/docs/*.md")):
    text = open(path).read()
    for m in re.finditer(r"```yaml\n(.*?)```", text, re.S):
        block = yaml.safe_load(m.group(1))
        if isinstance(block, dict) and set(block) & {"model", "data", "max_duration", "optimizer"}:
            line = text[:m.start()].count("\n") + 2
            recipes.append((f"{os.path.relpath(path, src)}:{line}", block))
fixtures = {
    "images": {"train_dir": f"{here}/img/train", "eval_dir": f"{here}/img/val"},
    "webdataset": {"train_shards": f"{here}/shards/train-000000.tar", "eval_shards": f"{here}/shards/val-000000.tar"},
    "tokens": {"train_files": f"{here}/tokens/train_*.bin", "eval_files": f"{here}/tokens/val_*.bin"},
}
values = {"mse", "l1", "smooth_l1", "huber", "binary_cross_entropy"}
with open("origins.txt", "w") as origins:
    for n, (origin, r) in enumerate(recipes):
        data = r.get("data") if isinstance(r.get("data"), dict) else None
        kind = data.get("dataset", "fashion_mnist") if data else "fashion_mnist"
        if data is not None:
            for key in ("train_list", "eval_list"):
                data.pop(key, None)
            data.update(fixtures.get(kind, {}))
            if kind == "files":
                loss = r.get("loss")
                labels = "values" if (loss if isinstance(loss, str) else next(iter(loss or {}), "")) in values else "classes"
                data.update({"train_inputs": f"{here}/x.npy", "train_labels": f"{here}/y_{labels}.npy",
                             "eval_inputs": f"{here}/vx.npy", "eval_labels": f"{here}/vy_{labels}.npy"})
            if kind in ("images", "webdataset", "tokens"):
                data["batch_size"] = data["eval_batch_size"] = 2
        model = r.get("model")
        if isinstance(model, dict):
            model.pop("weights", None)
            if model.get("name") == "torchscript":
                model["path"] = f"{here}/net.pt"
            if model.get("name") == "hf":  # the tokens' vocabulary: the fixture's tokenizer's
                model["path"] = f"{here}/hf"
                if data is not None:
                    data.pop("vocab_size", None)
        if str(r.get("device", "")).startswith("cuda") and not os.path.exists("/dev/nvidia0"):
            r["device"] = "auto"
        if isinstance(r.get("loggers"), dict):
            r["loggers"].pop("mlflow", None)
        yaml.safe_dump(r, open(f"recipe_{n}.yaml", "w"))
        # A model space's recipe without an architecture is a search's: run as one trial of it.
        space = "-"
        if isinstance(model, dict) and str(model.get("name", "")).endswith("_space") and "arch" not in model:
            space = model["name"]
        origins.write(f"recipe_{n}.yaml {space} {origin}\n")
PY
[ -s origins.txt ] || fail "no recipe found"

ran=0
while read -r file space origin; do
  ran=$((ran + 1))
  if [ "$space" != - ]; then  # one trial of its model space, briefly
    timeout 300 "$baton" search --model-space "$space" --recipe "$file" --trials 1 --set max_duration=2ba \
      --set eval_interval=2ba --set limit_eval_batches=1 --run-dir "search_$ran" >run.log 2>&1 ||
      fail "$origin does not run as a search of $space: $(grep -v '^ ' run.log | tail -1)"
    continue
  fi
  if ! timeout 300 "$baton" train "$file" --set fast_dev_run=true >run.log 2>&1; then
    fail "$origin does not run with fast_dev_run: $(grep -v '^ ' run.log | tail -1)"
  elif ! grep -q "fast_dev_run: .* ran; nothing written" run.log; then
    fail "$origin: no fast_dev_run line: $(tail -1 run.log)"
  fi
done <origins.txt
[ "$failures" -eq 0 ] || exit 1
echo "recipes: all $ran recipes ran with fast_dev_run"
