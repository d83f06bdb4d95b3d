#!/usr/bin/env bash
# baton tokenize with a model's tokenizer (label llm; .venv-llm: bench/peers/make-venv.sh --llm), against
# the libraries people use, over make_tokenizers.py's 1.2 MB corpus (scripts, emoji, digits, runs of
# white space, \r\n, special tokens' text):
# - byte-level BPE (GPT-2's and Llama 3's layouts, trained by `tokenizers`): `--ids` equals
#   tokenizers' ids of the whole corpus; the shards (two threads, parts of 1 MiB) hold those ids and
#   <|endoftext|>; `--decode` of the shard gives the corpus back;
# - SentencePiece (a tokenizer.model trained by Python's `sentencepiece`, byte fallback): `--ids`
#   equals sentencepiece's `encode` of the corpus, `--decode` its `decode`;
# - a vocabulary over 65,536 tokens writes uint32 shards (llm.c's Llama 3 format), said on the line.
# Bad input: one line, exit 2.
# Usage: tokenize_cli_test.sh BATON SOURCE_DIR
source "$(dirname "$0")/../common/lib.sh"
baton=$1
source_dir=$2
python=$("$source_dir/bench/peers/make-venv.sh" --llm 2>"$tmp/venv.log") || skip "no .venv-llm: $(tail -n1 "$tmp/venv.log")"
"$python" "$source_dir/tests/llm/make_tokenizers.py" "$tmp/tok" >/dev/null 2>&1 || fail_now "make_tokenizers.py failed"
corpus=$tmp/tok/corpus.txt

for name in gpt2-bpe llama3-bpe; do
  "$baton" tokenize --tokenizer "$tmp/tok/$name" --ids "$corpus" >"$tmp/$name.ids.json" 2>"$tmp/err.log" ||
    fail_now "$name: --ids: $(tail -1 "$tmp/err.log")"
  "$baton" tokenize "$corpus" --tokenizer "$tmp/tok/$name" --out "$tmp/$name-shards" --val-fraction 0 --threads 2 \
    >"$tmp/$name.log" 2>&1 || fail_now "$name: tokenize: $(tail -1 "$tmp/$name.log")"
  grep -q "of uint16 (llm.c's format: magic 20240520) tokens" "$tmp/$name.log" || fail "$name: the format not said: $(cat "$tmp/$name.log")"
  [ -f "$tmp/$name-shards/tokenizer.json" ] || fail "$name: no tokenizer.json beside the shards"
  "$baton" tokenize --tokenizer "$tmp/tok/$name" --decode "$tmp/$name-shards/train_000000.bin" >"$tmp/$name.decoded" ||
    fail "$name: --decode"
  "$python" - "$tmp/tok/$name" "$tmp/$name.ids.json" "$tmp/$name-shards/train_000000.bin" "$tmp/$name.decoded" "$corpus" <<'PY' ||
import json, sys
import numpy as np
from tokenizers import Tokenizer
folder, ids_json, shard, decoded, corpus = sys.argv[1:]
reference = np.fromfile(folder + "/ids.bin", dtype=np.int32).tolist()
ids = json.load(open(ids_json))
first = next((i for i, (a, b) in enumerate(zip(ids, reference)) if a != b), min(len(ids), len(reference)))
assert ids == reference, f"--ids: {len(ids)} ids, tokenizers {len(reference)}; first difference at {first}"
eot = Tokenizer.from_file(folder + "/tokenizer.json").token_to_id("<|endoftext|>")
header = np.fromfile(shard, dtype=np.int32, count=256)
tokens = np.fromfile(shard, dtype=np.uint16, offset=1024).tolist()
assert header[0] == 20240520 and header[2] == len(tokens), header[:3]
assert tokens == reference + [eot], f"the shard: {len(tokens)} tokens, expected {len(reference) + 1}"
text = open(corpus, encoding="utf-8", newline="").read()
assert open(decoded, encoding="utf-8", newline="").read() == text + "<|endoftext|>", "--decode: not the corpus"
print(f"{len(ids)} ids equal")
PY
    fail "$name: against tokenizers"
done

# SentencePiece: a tokenizer.model trained by Python's sentencepiece.
"$python" - "$corpus" "$tmp/sp" <<'PY' >"$tmp/sp.log" 2>&1 || fail_now "training a SentencePiece model: $(tail -2 "$tmp/sp.log")"
import json, os, sys
import sentencepiece as spm
corpus, out = sys.argv[1:]
os.makedirs(out)
spm.SentencePieceTrainer.train(input=corpus, model_prefix=out + "/tokenizer", vocab_size=4000, model_type="bpe",
                               byte_fallback=True, character_coverage=0.98, num_threads=2,
                               normalization_rule_name="identity", remove_extra_whitespaces=False,
                               input_sentence_size=200000, minloglevel=2)
sp = spm.SentencePieceProcessor(model_file=out + "/tokenizer.model")
text = open(corpus, encoding="utf-8", newline="").read()
ids = sp.encode(text)
json.dump(ids, open(out + "/ids.json", "w"))
# Not the corpus itself: its random characters include U+2581, which SentencePiece decodes as a space.
open(out + "/decoded.txt", "w", encoding="utf-8", newline="").write(sp.decode(ids))
PY
"$baton" tokenize --tokenizer "$tmp/sp" --ids "$corpus" >"$tmp/sp.ids.json" 2>"$tmp/err.log" ||
  fail_now "sentencepiece: --ids: $(tail -1 "$tmp/err.log")"
"$baton" tokenize --tokenizer "$tmp/sp/tokenizer.model" --decode "$tmp/sp.ids.json" >"$tmp/sp.decoded" || fail "sentencepiece: --decode"
python3 - "$tmp/sp.ids.json" "$tmp/sp/ids.json" "$tmp/sp.decoded" "$tmp/sp/decoded.txt" <<'PY' || fail "sentencepiece: against sentencepiece"
import json, sys
ids, reference = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
first = next((i for i, (a, b) in enumerate(zip(ids, reference)) if a != b), min(len(ids), len(reference)))
assert ids == reference, f"--ids: {len(ids)} ids, sentencepiece {len(reference)}; first difference at {first}"
assert open(sys.argv[3], encoding="utf-8", newline="").read() == open(sys.argv[4], encoding="utf-8", newline="").read()
PY

# A vocabulary over 65,536 tokens: uint32 shards, read by `data: tokens`.
python3 - "$tmp/tok/gpt2-bpe/tokenizer.json" "$tmp/big" <<'PY'
import json, os, sys
t = json.load(open(sys.argv[1]))
t["added_tokens"].append({"id": 70000, "content": "<|big|>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True})
os.makedirs(sys.argv[2])
json.dump(t, open(sys.argv[2] + "/tokenizer.json", "w"))
open(sys.argv[2] + "/text.txt", "w").write("the rank <|big|> and the shard\n" * 200)
PY
"$baton" tokenize "$tmp/big/text.txt" --tokenizer "$tmp/big" --out "$tmp/big-shards" >"$tmp/big.log" 2>&1 ||
  fail "uint32: $(tail -1 "$tmp/big.log")"
grep -q "uint32 (llm.c's Llama 3 format: magic 20240801)" "$tmp/big.log" || fail "uint32: not said: $(cat "$tmp/big.log")"
python3 - "$tmp/big-shards/train_000000.bin" <<'PY' || fail "uint32: the shard"
import struct, sys
data = open(sys.argv[1], "rb").read()
magic, version, n = struct.unpack("<3i", data[:12])
assert (magic, version) == (20240801, 7) and len(data) == 1024 + 4 * n, (magic, version, n, len(data))
assert 70000 in struct.unpack("<%dI" % n, data[1024:])
PY

# Bad input: one line, exit 2.
REFUSED_ONE_LINE=1 refused "a folder without a tokenizer" "no tokenizer.json or tokenizer.model" \
  "$baton" tokenize --tokenizer "$tmp" --ids "$corpus"
printf '{"model": ' >"$tmp/corrupt.json"
REFUSED_ONE_LINE=1 refused "a corrupt tokenizer.json" "corrupt.json" "$baton" tokenize --tokenizer "$tmp/corrupt.json" --ids "$corpus"
printf '[1, 2, 99999]' >"$tmp/far.json"
REFUSED_ONE_LINE=1 refused "an id outside the vocabulary" "id 99999 (position 2) is outside the tokenizer's" \
  "$baton" tokenize --tokenizer "$tmp/tok/gpt2-bpe" --decode "$tmp/far.json"
printf '{"a": 1}' >"$tmp/notids.json"
REFUSED_ONE_LINE=1 refused "ids that are not a list" "neither a JSON list of token ids" \
  "$baton" tokenize --tokenizer "$tmp/tok/gpt2-bpe" --decode "$tmp/notids.json"
printf 'bad \xff byte\n' >"$tmp/bad.txt"
REFUSED_ONE_LINE=1 refused "a text that is not UTF-8" "bad.txt" "$baton" tokenize --tokenizer "$tmp/tok/gpt2-bpe" --ids "$tmp/bad.txt"
REFUSED_ONE_LINE=1 refused "--ids without --tokenizer" "--ids and --decode need --tokenizer" "$baton" tokenize --ids "$corpus"
finish tokenize_cli
