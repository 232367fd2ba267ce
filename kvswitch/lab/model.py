"""A tiny random-weight Llama model in GGUF, generated here: no download, seeded, reproducible.

llama.cpp serves it like any other model. The weights are noise, so the text is nonsense, but
everything a latency probe looks at is real: prefill cost grows with the prompt, the KV cache
fills, ``/metrics`` counts tokens, slots can be saved and restored.

Built so that a probe's numbers are easy to read:

* **Tokenizer**: SentencePiece-style (``tokenizer.ggml.model = "llama"``) with byte fallback.
  The vocabulary holds the special tokens ``<unk> <s> </s> <|im_start|> <|im_end|>``, the 256
  byte tokens ``<0x00>…<0xFF>``, every printable ASCII character (bare and after ``▁``) and
  about 550 English words with every ``▁``-prefix of each, scored by length so that SPM's merges
  reach whole words: one listed word is one token, and any text at all tokenizes.
* **Chat**: a ChatML template is embedded, so ``/v1/chat/completions`` works.
* **Generation never ends early**: the output rows of the special and byte tokens are zero and
  the word rows are scaled up, so EOS / ``<|im_end|>`` are never sampled and no partial UTF-8
  is ever produced: one generated token is one SSE chunk.

``make_model(path)`` writes the same bytes for the same preset and seed, every time.
Command line: ``python -m kvswitch.lab.model PATH [--preset tiny|medium] [--seed N]``.
"""

from __future__ import annotations

import argparse
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvswitch.prompts import PROBE_WORDS

__all__ = ["CHATML_TEMPLATE", "PRESETS", "SPECIAL_TOKENS", "WORDS", "ModelShape", "make_model", "vocabulary"]

SPM_SPACE = "\u2581"
"""SentencePiece's word-boundary marker ``▁``."""

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>")
"""Token ids 0–4: unknown, BOS, EOS, ChatML's turn start and turn end (EOT)."""

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# About 540 plain English words, plus the words kvswitch's probe builds its prompts from
# (kvswitch.prompts), so that a probe prompt of N words is about N tokens.
_WORD_TEXT = """
a about above across act add after again against age ago air all almost alone along already
also always am among an and animal another answer any appear are area arm around art as ask at
away back bad ball base be bear beat beautiful became because become bed been before began begin
behind being believe below best better between big bird black blue boat body book both bottom
box boy bring brother brought build built busy but buy by call came can car care carry case
cat catch cause center certain chair change check child children city class clean clear close
cold color come common complete could country course cover cross cry cut dark day dear decide
deep did different dinner do doctor does dog done door down draw dream drink drive dry during
each early earth east easy eat edge egg end enough even evening ever every example eye face fact
fall family far farm fast father fear feel feet few field fill find fine fire first fish five
floor fly follow food foot for force form found four free friend from front full game garden
gave get girl give glass go gold gone good got great green ground group grow had half hand happy
hard has have he head hear heard heart heavy help her here high hill him his hold hole home
hope horse hot hour house how however hundred idea if important in inside into is island it its
just keep kind king knew know land large last late laugh lay lead learn least leave left less
let letter life light like line list listen little live long look lost lot love low made main
make man many map mark may me mean measure men might mile mind minute miss money month moon more
morning most mother mountain move much music must my name near need never new next night no
north not note nothing now number of off often old on once one only open or order other our out
over own page paint paper part pass past people perhaps person picture piece place plain plan
plant play point poor possible power press pretty problem pull put question quick quite rain
ran reach read ready real red remember rest rich ride right river road rock room round rule run
said same saw say school sea second see seem seen self sell send sentence set several shall
shape she ship short should show side simple since sing sit six size sleep slow small snow so
some something song soon sound south space speak special spring stand star start stay step still
stop story street strong study such summer sun sure table take talk teach tell ten than that
the their them then there these they thing think this those though thought three through time
to today together told too took top toward town tree true try turn two under until up upon us
use very voice wait walk wall want war warm was watch water way we week well went were west
what when where which while white who whole why wide will wind window winter with without woman
wonder wood word work world would write year yes yet you young your
"""
WORDS: tuple[str, ...] = tuple(
    dict.fromkeys([*_WORD_TEXT.split(), *PROBE_WORDS, "hello", "switch", "split", "merged", "slot"])
)


@dataclass(frozen=True)
class ModelShape:
    """A Llama shape: layers, hidden size, feed-forward size, attention heads, context, dtype."""

    layers: int
    hidden: int
    ff: int
    heads: int
    ctx: int = 4096
    f16: bool = False
    logit_scale: float = 8.0  # target std of the word logits: peaked sampling, EOS never wins

    def params(self, n_vocab: int) -> int:
        per_layer = 4 * self.hidden * self.hidden + 3 * self.hidden * self.ff + 2 * self.hidden
        return 2 * n_vocab * self.hidden + self.layers * per_layer + self.hidden


PRESETS: dict[str, ModelShape] = {
    "tiny": ModelShape(layers=4, hidden=256, ff=768, heads=4),
    "medium": ModelShape(layers=8, hidden=512, ff=1536, heads=8, f16=True),
}
"""``tiny``: 4.3 M parameters in F32 (~17 MB), prefill ~0.1 ms/token on two cores;
``medium``: 8 layers, F16 (~58 MB), about six times slower per token — a more realistic
prefill/decode ratio for demos."""


def vocabulary() -> tuple[list[str], list[float], list[int], int]:
    """(pieces, scores, token types, count of special + byte tokens at the start)."""
    from gguf import TokenType

    pieces: list[str] = []
    types: list[int] = []
    known: set[str] = set()

    def add(piece: str, kind: TokenType) -> None:
        if piece not in known:
            known.add(piece)
            pieces.append(piece)
            types.append(int(kind))

    add(SPECIAL_TOKENS[0], TokenType.UNKNOWN)
    for token in SPECIAL_TOKENS[1:]:
        add(token, TokenType.CONTROL)
    for byte in range(256):
        add(f"<0x{byte:02X}>", TokenType.BYTE)
    fixed = len(pieces)
    add(SPM_SPACE, TokenType.NORMAL)
    for char in string.ascii_letters + string.digits + string.punctuation:
        add(char, TokenType.NORMAL)
        add(SPM_SPACE + char, TokenType.NORMAL)
    for word in WORDS:
        marked = SPM_SPACE + word
        for end in range(2, len(marked) + 1):  # every prefix: SPM merges pairwise up to the word
            add(marked[:end], TokenType.NORMAL)
        for end in range(2, len(word) + 1):  # and the bare word, for text that starts a line
            add(word[:end], TokenType.NORMAL)
    # SPM merges the adjacent pair whose merged piece scores highest: longer pieces win.
    scores = [0.0] * fixed + [float(len(p)) for p in pieces[fixed:]]
    return pieces, scores, types, fixed


def make_model(path: str | Path, *, preset: str = "tiny", seed: int = 0) -> Path:
    """Write the ``preset`` model with weights drawn from ``seed`` to ``path``; returns the path.

    The same preset and seed give a byte-identical file."""
    import numpy as np
    from gguf import GGUFWriter, LlamaFileType

    try:
        shape = PRESETS[preset]
    except KeyError:
        raise ValueError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})") from None
    if shape.hidden % shape.heads:
        raise ValueError("hidden size must be a multiple of the head count")
    out_path = Path(path)
    pieces, scores, types, fixed = vocabulary()
    n_vocab = len(pieces)
    head_dim = shape.hidden // shape.heads
    rng = np.random.default_rng(seed)
    dtype = np.float16 if shape.f16 else np.float32

    def weight(rows: int, cols: int, std: float) -> Any:
        return (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(std)).astype(dtype)

    def ones() -> Any:
        return np.ones(shape.hidden, dtype=np.float32)

    writer = GGUFWriter(str(out_path), "llama")
    writer.add_name(f"kvswitch-{preset}-llama-{shape.layers}L-{shape.hidden}d-seed{seed}")
    writer.add_context_length(shape.ctx)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(shape.layers)
    writer.add_feed_forward_length(shape.ff)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(LlamaFileType.MOSTLY_F16 if shape.f16 else LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_eot_token_id(4)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(True)
    writer.add_chat_template(CHATML_TEMPLATE)

    # numpy shape (out, in); GGUF records the dimensions reversed, as llama.cpp expects.
    writer.add_tensor("token_embd.weight", weight(n_vocab, shape.hidden, 1.0))
    writer.add_tensor("output_norm.weight", ones())
    logits = rng.standard_normal((n_vocab, shape.hidden), dtype=np.float32)
    logits *= np.float32(shape.logit_scale / np.sqrt(shape.hidden))
    logits[:fixed, :] = 0.0  # specials and bytes: logit 0, far below every word's
    writer.add_tensor("output.weight", logits.astype(dtype))
    std = 0.02
    for layer in range(shape.layers):
        blk = f"blk.{layer}"
        writer.add_tensor(f"{blk}.attn_norm.weight", ones())
        writer.add_tensor(f"{blk}.attn_q.weight", weight(shape.hidden, shape.hidden, std))
        writer.add_tensor(f"{blk}.attn_k.weight", weight(shape.hidden, shape.hidden, std))
        writer.add_tensor(f"{blk}.attn_v.weight", weight(shape.hidden, shape.hidden, std))
        writer.add_tensor(f"{blk}.attn_output.weight", weight(shape.hidden, shape.hidden, std))
        writer.add_tensor(f"{blk}.ffn_norm.weight", ones())
        writer.add_tensor(f"{blk}.ffn_gate.weight", weight(shape.ff, shape.hidden, std))
        writer.add_tensor(f"{blk}.ffn_up.weight", weight(shape.ff, shape.hidden, std))
        writer.add_tensor(f"{blk}.ffn_down.weight", weight(shape.hidden, shape.ff, std))

    out_path.parent.mkdir(parents=True, exist_ok=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m kvswitch.lab.model", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", help="the .gguf file to write")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = make_model(args.path, preset=args.preset, seed=args.seed)
    shape = PRESETS[args.preset]
    n_vocab = len(vocabulary()[0])
    sys.stdout.write(
        f"wrote {out}: {args.preset}, vocab {n_vocab}, {shape.layers} layers, hidden {shape.hidden}, "
        f"ff {shape.ff}, {shape.heads} heads, ~{shape.params(n_vocab) / 1e6:.1f} M parameters, "
        f"{'F16' if shape.f16 else 'F32'}, {out.stat().st_size / 1e6:.1f} MB\n"
    )


if __name__ == "__main__":
    main()
