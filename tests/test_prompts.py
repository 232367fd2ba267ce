"""kvswitch.prompts: one vocabulary of filler words for the probe and doctor, each keeping the
exact sequence it had (so recorded timings stay comparable), and the lab model knows the probe's."""

from __future__ import annotations

import subprocess
import sys

from kvswitch.prompts import PROBE_WORDS, WORDS, filler, prompt_words


def test_one_vocabulary() -> None:
    assert WORDS[: len(PROBE_WORDS)] == PROBE_WORDS
    assert len(set(WORDS)) == len(WORDS) == 30
    assert all(w.isascii() and w.isalpha() and w.islower() for w in WORDS)


def test_the_probe_filler_steps_by_seven() -> None:
    assert filler(3, 0) == "cache model request"
    assert filler(0, 0) == filler(1, 0) == "cache"  # never empty
    assert filler(2, 5) == "chunk transfer"
    assert len(filler(400, 3).split()) == 400
    assert set(filler(400, 3).split()) == set(PROBE_WORDS)  # 7 and 26 are coprime: every word appears


def test_doctor_words_are_deterministic_per_seed() -> None:
    assert prompt_words(5, 0) == ["latency", "matrix", "engine", "transfer", "head"]
    assert prompt_words(5, 0) == prompt_words(5, 0)
    assert prompt_words(50, 1) != prompt_words(50, 2)
    assert len(prompt_words(0, 0)) == 1 and len(prompt_words(400, 7)) == 400
    assert set(prompt_words(400, 0)) <= set(WORDS)


def test_the_lab_model_has_every_probe_word() -> None:
    from kvswitch.lab.model import WORDS as LAB_WORDS

    assert set(PROBE_WORDS) <= set(LAB_WORDS)


def test_prompts_is_stdlib_only() -> None:
    code = "import sys, kvswitch.prompts; print(' '.join(m for m in sys.modules if m.startswith('kvswitch')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert sorted(out) == ["kvswitch", "kvswitch.prompts"]
