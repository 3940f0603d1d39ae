"""Write ``reference.json``: the published library's embeddings of a fixed set of sentences.

Run once, in a throwaway environment that has torch and Hugging Face ``transformers`` (the
project depends on neither)::

    python -m venv /tmp/ref && /tmp/ref/bin/pip install torch transformers safetensors numpy
    /tmp/ref/bin/python examples/bert/make_reference.py   # after examples/bert/fetch.py

It loads the model and its tokenizer from the fetched files with ``AutoModel`` and
``AutoTokenizer``, on the CPU in f32, runs the sentences as one padded batch, mean-pools the
last hidden states over the attention mask and divides by the norm (the model card's usage:
``1_Pooling/config.json`` says mean pooling, and the sentence-transformers pipeline ends in a
normalization). The fixture keeps the sentences, each sentence's token ids, the embeddings
(every f32 written as the decimal of its exact value) and the versions used.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import tokenizers
import torch  # type: ignore[import-not-found, unused-ignore]  # a throwaway venv's, never the project's
import transformers  # type: ignore[import-not-found]

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fetch import cache_dir, complete  # noqa: E402

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome!",
    "The cat sits outside on the mat.",
    "Ünïcödé àccents, numbers 1,234.56 and punctuation: do they survive?",
    "Transformers are recorded once and run anywhere.",
    "short",
    "A much longer sentence that keeps going so that the padded batch really has to mask "
    "the other sentences' keys, which is exactly what the attention mask is for.",
]


def main() -> None:
    folder = cache_dir()
    if not complete(folder):
        raise SystemExit(f"{folder}: no model files; run python examples/bert/fetch.py first")
    torch.manual_seed(0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch).last_hidden_state
    keep = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
    pooled = (states * keep).sum(1) / keep.sum(1).clamp(min=1e-9)
    embeddings = torch.nn.functional.normalize(pooled, p=2, dim=1).numpy().astype(np.float32)
    ids = [[int(i) for i, k in zip(row, mask, strict=True) if k] for row, mask in zip(batch["input_ids"].tolist(), batch["attention_mask"].tolist(), strict=True)]
    manifest = json.loads((folder / "manifest.json").read_text())
    fixture = {
        "model": "sentence-transformers/all-MiniLM-L6-v2, from " + manifest["package"],
        "wheel_sha256": manifest["wheel_sha256"],
        "produced_by": "examples/bert/make_reference.py: AutoModel (eager attention), CPU, f32; mean pooling, L2 normalization",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
        },
        "sentences": SENTENCES,
        "ids": ids,
        "embeddings": [[float(v) for v in row] for row in embeddings],
    }
    out = HERE / "reference.json"
    # One line per sentence's ids and per embedding: reviewable, and diffs stay small.
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in fixture.items() if k not in ("ids", "embeddings")]
    for key in ("ids", "embeddings"):
        rows = ",\n".join("  " + json.dumps(row) for row in fixture[key])
        lines.append(f' "{key}": [\n{rows}\n ],')
    lines[-1] = lines[-1].rstrip(",")
    out.write_text("{\n" + "\n".join(lines) + "\n}\n", encoding="utf-8")
    print(f"{out}: {len(SENTENCES)} sentences, {embeddings.shape[1]} dimensions")


if __name__ == "__main__":
    main()
