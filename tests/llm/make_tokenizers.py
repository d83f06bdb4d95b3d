"""Byte-level BPE tokenizers trained by Hugging Face `tokenizers` for baton's tokenizer tests.

    python make_tokenizers.py OUT

writes OUT/corpus.txt (about 1.2 MB: several scripts, emoji, digits, runs of spaces, tabs and newlines,
special tokens), and for GPT-2's layout (ByteLevel's regular expression) and Llama 3's (a Split
regular expression, then ByteLevel; ignore_merges) OUT/<name>/tokenizer.json, trained on another
text, and OUT/<name>/ids.bin: `tokenizers`' ids of corpus.txt as int32, nothing added; llama3-bpe
with Llama 3's post-processor (<|begin_of_text|> first). OUT/<name>/prompts.json: a few prompts and
their ids as transformers' tokenizer(prompt) gives them, special tokens added.
"""
import json
import random
import sys
from pathlib import Path

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
WORDS = ["the", "rank", "shard", "gather", "token", "don't", "we'll", "I'M", "naïve", "café", "über", "straße",
         "日本語", "中文字符", "Ελληνικά", "русский", "עברית", "العربية", "हिन्दी", "😀", "🚀🚀", "👩‍👩‍👧", "x²",
         "3.14159", "2026", "1,234,567", "--", "...", "(x)", "{\"k\": 1}", "e=mc^2", "Ωmega", "ﬁne"]
SPECIAL = ["<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>"]


def text(seed, size):
    rng = random.Random(seed)
    parts, length = [], 0
    while length < size:
        r = rng.random()
        if r < 0.70:
            w = rng.choice(WORDS)
        elif r < 0.80:
            w = str(rng.randrange(10 ** rng.randrange(1, 9)))
        elif r < 0.90:
            w = rng.choice([" ", "  ", "    ", "\t", "\n", "\n\n", "\r\n", " \n ", "        \t  "])
        elif r < 0.93:
            w = rng.choice(SPECIAL)
        else:
            w = "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(1, 5)))
            w = w.encode("utf-8", "ignore").decode("utf-8")
        sep = "" if rng.random() < 0.2 else " "
        parts.append(w + sep)
        length += len(w) + 1
    return "".join(parts)


def train(pre, ignore_merges):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text(1, 400_000)], trainer)
    return tok


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    corpus = text(2, 1_200_000)
    (out / "corpus.txt").write_bytes(corpus.encode("utf-8"))
    layouts = {
        "gpt2-bpe": (pre_tokenizers.ByteLevel(add_prefix_space=False), False),
        "llama3-bpe": (pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
                       True),
    }
    for name, (pre, ignore) in layouts.items():
        tok = train(pre, ignore)
        if name == "llama3-bpe":  # Llama 3's post-processor: <|begin_of_text|> before a text
            bos = "<|begin_of_text|>"
            tok.post_processor = processors.Sequence([
                processors.ByteLevel(trim_offsets=False),
                processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                              special_tokens=[(bos, tok.token_to_id(bos))])])
        (out / name).mkdir(exist_ok=True)
        tok.save(str(out / name / "tokenizer.json"))
        ids = tok.encode(corpus, add_special_tokens=False).ids
        np.asarray(ids, dtype=np.int32).tofile(out / name / "ids.bin")
        # A prompt's ids as transformers' tokenizer(prompt) gives them: the special tokens added.
        fast = PreTrainedTokenizerFast(tokenizer_object=tok)
        prompts = ["The capital of France is", "  two  spaces, 3.14 and 😀", "<|endoftext|> after a special"]
        (out / name / "prompts.json").write_text(json.dumps([{"text": p, "ids": fast(p)["input_ids"]} for p in prompts]))


if __name__ == "__main__":
    main(sys.argv[1])
