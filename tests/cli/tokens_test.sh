#!/usr/bin/env bash
# baton tokenize and token shards (seconds): a corpus tokenized into llm.c shards with a trained
# SentencePiece tokenizer, a GPT trained on them for a number of tokens with its vocabulary from the
# tokenizer, the tokenizer reused, and bad input (each exit 2, nothing written).
# Usage: tokens_test.sh BATON_BINARY
set -uo pipefail
baton=$1
source "$(dirname "$0")/../common/lib.sh"
cd "$tmp" || exit 1

mkdir corpus
/usr/bin/python3 - <<'PY'
import random
random.seed(3)
words = "the quick brown fox jumps over lazy dog and then runs away from a river under trees at night".split()
for name, lines in (("a", 4000), ("b", 1500)):
    with open(f"corpus/{name}.txt", "w") as f:
        for i in range(lines):
            f.write(" ".join(random.choice(words) for _ in range(random.randrange(3, 12))) + ".\n")
PY

"$baton" tokenize corpus --out shards --vocab-size 400 --shard-tokens 20000 >tokenize.log 2>&1 ||
  fail "tokenize: $(tail -1 tokenize.log)"
for f in shards/tokenizer.model shards/train_000000.bin shards/train_000001.bin shards/val_000000.bin; do
  [ -f "$f" ] || fail "tokenize wrote no $f: $(ls shards)"
done
grep -q "training and .* validation tokens" tokenize.log || fail "tokenize says nothing of what it wrote"

cat >gpt.yaml <<'YAML'
max_duration: 20480tok
eval_interval: 1ep
progress_bar: false
model: {name: gpt, layers: 1, width: 32, heads: 2}
optimizer: {name: adamw, lr: 0.003}
callbacks: {speed_monitor: {window_size: 10}}
data: {dataset: tokens, train_files: "shards/train_*.bin", eval_files: "shards/val_*.bin", context: 32, batch_size: 8}
YAML
"$baton" train gpt.yaml --run-dir run >train.log 2>&1 || fail "train on the shards: $(tail -3 train.log)"
"$baton" checkpoint inspect run/checkpoints/latest --json >inspect.json 2>&1 || fail "inspect: $(tail -1 inspect.json)"
/usr/bin/python3 - <<'PY' || fail "the run's checkpoint and metrics"
import json
meta = json.load(open("inspect.json"))
assert meta["timestamp"]["token"] == 20480, meta["timestamp"]
assert meta["timestamp"]["batch"] == 80, meta["timestamp"]
embedding = [t for t in meta["tensors"] if t["name"] == "model/module.tokens.weight"]
assert embedding and embedding[0]["shape"][0] == 400, embedding  # the tokenizer's vocabulary
rows = [json.loads(l) for l in open("run/metrics.jsonl")]
speeds = [r["throughput/tokens_per_sec"] for r in rows if "throughput/tokens_per_sec" in r]
assert speeds and all(s > 0 for s in speeds), "no throughput/tokens_per_sec"
assert any("eval/loss" in r for r in rows), "no evaluation"
PY

# The language model exported as TorchScript: it takes token ids (once: traced on floats).
"$baton" export run/checkpoints/latest --torchscript gpt.pt >export.log 2>&1 || fail "export of the gpt: $(tail -1 export.log)"
# predict on it: not the logits (a vocabulary's worth a token) but the top-k next tokens' ids and
# log-probabilities, and the actual next tokens' (whose mean is the evaluation's loss); more than
# --max-output-mib is refused before anything is written.
"$baton" predict gpt.yaml --load run/model.pt --out next.npy --top-k 3 >predict.log 2>&1 || fail "predict: $(tail -2 predict.log)"
grep -q "the top 3 next tokens' ids \[.*, 32, 3\] written to next.npy" predict.log || fail "predict said: $(cat predict.log)"
/usr/bin/python3 - <<'PY' || fail "predict's next tokens"
import json, re
import numpy as np
ids, logprobs, target = np.load("next.npy"), np.load("next.logprobs.npy"), np.load("next.target_logprobs.npy")
assert ids.dtype == np.int64 and ids.shape[1:] == (32, 3) and logprobs.shape == ids.shape, (ids.shape, logprobs.shape)
assert target.shape == ids.shape[:2] and (ids >= 0).all() and (ids < 400).all()
assert (np.diff(logprobs, axis=2) <= 0).all() and (logprobs <= 0).all(), "top-k log-probabilities not in order"
assert (target <= logprobs[:, :, 0] + 1e-5).all(), "an actual token likelier than the top one"
loss = [json.loads(l)["eval/loss"] for l in open("run/metrics.jsonl") if "eval/loss" in json.loads(l)][-1]
assert abs(-target.mean() - loss) < 1e-3 * max(1, loss), (-target.mean(), loss)
said = float(re.search(r"mean log-probability (-?[0-9.]+)", open("predict.log").read()).group(1))
assert abs(said - target.mean()) < 1e-3, said
PY
refused "outputs too large" "predict: the outputs would be about" "$baton" predict gpt.yaml --load run/model.pt \
  --out big.npy --top-k 1000 --max-output-mib 1
[ ! -e big.npy ] && [ ! -e big.logprobs.npy ] || fail "refused predictions were written"

# A named evaluation set of token shards: eval/NAME/METRIC beside eval/loss.
"$baton" train gpt.yaml --run-dir sets --set max_duration=4ba \
  --set 'eval={held: {files: "shards/val_*.bin", metrics: [loss, perplexity], batch_size: 4}}' >sets.log 2>&1 ||
  fail "an eval set of token shards: $(tail -2 sets.log)"
grep -q '"eval/held/perplexity"' sets/metrics.jsonl || fail "no eval/held/perplexity: $(tail -2 sets.log)"
refused "an eval set with no files" "eval.held: expected files" \
  "$baton" train gpt.yaml --run-dir bad_sets --set 'eval={held: {metrics: [loss]}}'

# A given tokenizer: copied beside the new shards, the same tokens for the same text.
"$baton" tokenize corpus/a.txt --out again --tokenizer shards/tokenizer.model >again.log 2>&1 ||
  fail "tokenize --tokenizer: $(tail -1 again.log)"
cmp -s again/tokenizer.model shards/tokenizer.model || fail "--tokenizer: the model is not the one given"
cmp -s -i 1024 -n 4000 again/train_000000.bin shards/train_000000.bin ||  # past the headers (other counts)
  fail "--tokenizer: other tokens for the same text"

# Bad input: each refused with exit 2, naming what is wrong; nothing written.
refused "tokenize into a corpus folder" "already holds" "$baton" tokenize corpus --out shards --vocab-size 400
printf 'not a model' >bad.model
refused "a tokenizer that is not one" "bad.model: not a SentencePiece model" \
  "$baton" tokenize corpus --out fresh --tokenizer bad.model
[ ! -e fresh ] || fail "a bad tokenizer left the folder fresh/"
refused "both --vocab-size and --tokenizer" "not both" \
  "$baton" tokenize corpus --out fresh --vocab-size 400 --tokenizer shards/tokenizer.model
refused "a missing text" "nothing.txt: no such file" "$baton" tokenize nothing.txt --out fresh --vocab-size 400
refused "a vocabulary a shard cannot hold" "vocab-size" "$baton" tokenize corpus --out fresh --vocab-size 70000
[ ! -e fresh ] || fail "bad input left the folder fresh/"
mkdir bad
/usr/bin/python3 - <<'PY'
import struct
tokens = struct.pack("<2000H", *range(2000))
header = lambda magic, count: struct.pack("<256i", magic, 1, count, *([0] * 253))
open("bad/magic.bin", "wb").write(header(20240521, 2000) + tokens)
open("bad/count.bin", "wb").write(header(20240520, 2100) + tokens)
PY
refused "a shard with a wrong magic" "bad/magic.bin: magic 20240521" \
  "$baton" train gpt.yaml --set "data.train_files=bad/magic.bin" --run-dir badrun
refused "a shard cut short" "bad/count.bin: the header counts 2100 tokens" \
  "$baton" train gpt.yaml --set "data.train_files=bad/count.bin" --run-dir badrun
refused "a glob of nothing" "data.eval_files: .*matches no regular file" \
  "$baton" train gpt.yaml --set "data.eval_files=shards/test_*.bin" --run-dir badrun
[ ! -e badrun ] || fail "bad shards left a run directory"

[ "$failures" -eq 0 ] && echo "tokens: ok"
exit $((failures > 0))
