"""The generated GGUF model: reproducible, loadable, one token per listed word."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kvswitch.lab.llama import LlamaServer
from kvswitch.prompts import PROBE_WORDS
from tests.lab.conftest import require_lab
from tests.lab.support import http_post


@pytest.fixture(autouse=True)
def _lab() -> None:
    require_lab()


def test_make_model_is_byte_identical_on_rerun(tmp_path: Path, tiny_model: Path) -> None:
    from kvswitch.lab.model import make_model

    again = make_model(tmp_path / "again.gguf")
    assert again == tmp_path / "again.gguf"
    assert again.read_bytes() == tiny_model.read_bytes()
    other = make_model(tmp_path / "seed1.gguf", seed=1)
    assert other.stat().st_size == again.stat().st_size and other.read_bytes() != again.read_bytes()


def test_tiny_model_metadata(tiny_model: Path) -> None:
    from gguf import GGUFReader

    from kvswitch.lab.model import CHATML_TEMPLATE, SPECIAL_TOKENS, vocabulary

    reader = GGUFReader(tiny_model)

    def value(key: str) -> object:
        return reader.fields[key].contents()

    assert value("general.architecture") == "llama"
    assert value("llama.block_count") == 4
    assert value("llama.embedding_length") == 256
    assert value("llama.feed_forward_length") == 768
    assert value("llama.attention.head_count") == 4
    assert value("llama.context_length") == 4096
    assert value("tokenizer.ggml.model") == "llama"
    assert value("tokenizer.chat_template") == CHATML_TEMPLATE
    tokens = value("tokenizer.ggml.tokens")
    assert isinstance(tokens, list) and tokens[:5] == list(SPECIAL_TOKENS)
    assert tokens[5] == "<0x00>" and tokens[260] == "<0xFF>"
    pieces, _scores, _types, fixed = vocabulary()
    assert tokens == pieces and fixed == 261
    output = next(t for t in reader.tensors if t.name == "output.weight")
    rows = output.data.reshape(len(pieces), -1)
    assert not rows[:fixed].any()  # specials and bytes can never win: no early EOS, no partial UTF-8
    assert rows[fixed:].any(axis=1).all()


def test_medium_preset_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "medium.gguf"
    proc = subprocess.run(
        [sys.executable, "-m", "kvswitch.lab.model", str(out), "--preset", "medium"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "medium" in proc.stdout and "F16" in proc.stdout
    from gguf import GGUFReader

    reader = GGUFReader(out)
    assert reader.fields["llama.block_count"].contents() == 8
    assert reader.fields["llama.embedding_length"].contents() == 512
    assert reader.fields["llama.attention.head_count"].contents() == 8
    q = next(t for t in reader.tensors if t.name == "blk.0.attn_q.weight")
    assert q.tensor_type.name == "F16"


def test_unknown_preset(tmp_path: Path) -> None:
    from kvswitch.lab.model import make_model

    with pytest.raises(ValueError, match="unknown preset"):
        make_model(tmp_path / "x.gguf", preset="huge")


def test_one_token_per_word_in_llamacpp(llama: LlamaServer) -> None:
    """llama.cpp's tokenizer reads the vocabulary as built: each listed word (and each word the
    probe builds its prompts from) is one token, and any other text still tokenizes."""
    from kvswitch.lab.model import WORDS

    text = " ".join(WORDS)
    tokens = http_post(f"{llama.url}/tokenize", {"content": text})["tokens"]
    assert isinstance(tokens, list) and len(tokens) == len(WORDS)
    probe = http_post(f"{llama.url}/tokenize", {"content": " ".join(PROBE_WORDS)})["tokens"]
    assert isinstance(probe, list) and len(probe) == len(PROBE_WORDS)
    odd = http_post(f"{llama.url}/tokenize", {"content": "Zürich 42 {x}", "with_pieces": True})["tokens"]
    assert isinstance(odd, list) and len(odd) > 5  # bytes and characters: nothing is unknown
