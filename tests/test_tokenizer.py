"""descent.tokenizer: the core byte-level BPE over SmolLM2's vocabulary.

Hand-derived expectations first; then ``peer`` tests against Hugging Face's tokenizer built by
``transformers`` from the same GGUF. That reference needs one fix: transformers has no entry for the
GGUF's pre-tokenizer ``smollm`` and falls back to plain GPT-2 splitting, so the fixture gives it the
pre-tokenizer of SmolLM2's own ``tokenizer.json`` (``Digits(individual_digits=True)`` then
``ByteLevel``) -- the same rules llama.cpp applies for ``smollm``. ``test_unpatched_reference_gap``
pins the difference.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descent import tokenizer as T

# --------------------------------------------------------------------------- pure, by hand


def test_bytes_to_unicode_is_gpt2s_map():
    m = T.bytes_to_unicode()
    assert len(m) == 256 and len(set(m.values())) == 256
    assert m[ord("A")] == "A"  # printable ASCII maps to itself
    assert m[0x20] == "Ġ" and m[0x0A] == "Ċ"  # space is the 33rd non-printable byte: 256 + 32 = U+0120
    assert m[0x00] == "Ā"  # U+0100


def test_pre_tokenizer_splits_digits_one_by_one():
    assert T.split_digits("ab12 c") == ["ab", "1", "2", " c"]
    assert T.pre_tokenize("I have 12 cats") == ["I", " have", " ", "1", "2", " cats"]
    assert T.pre_tokenize("½²") == ["½", "²"]  # No category counts as a number (\\p{N})


def test_gpt2_split_rules():
    assert T.gpt2_split("a   b") == ["a", "  ", " b"]  # the last space goes with the word
    assert T.gpt2_split("don't") == ["don", "'t"]
    assert T.gpt2_split("Hello, world!!") == ["Hello", ",", " world", "!!"]
    assert T.gpt2_split("x\n\ny") == ["x", "\n", "\n", "y"]  # \s+(?!\S) keeps one \n back; then \s+
    assert T.gpt2_split("end  ") == ["end", "  "]
    assert T.gpt2_split("") == []


def test_known_ids():
    # Ids as the GGUF vocabulary lists them (tokenizer.ggml.tokens): "The"=504, "Ġcapital"=3575,
    # "Ġof"=282, "ĠFrance"=4649, "Ġis"=314; also what transformers' tokenizer returns (peer tests below).
    tok = T.smollm2()
    assert [tok.tokens[i] for i in (504, 3575, 282, 4649, 314)] == [
        "The",
        "Ġcapital",
        "Ġof",
        "ĠFrance",
        "Ġis",
    ]
    assert T.encode("The capital of France is") == [504, 3575, 282, 4649, 314]
    assert T.tokens("The capital of France is") == [
        ("The", 504),
        (" capital", 3575),
        (" of", 282),
        (" France", 4649),
        (" is", 314),
    ]


def test_digits_are_single_tokens():
    # Tokens 17.. are the printable ASCII bytes from "!" (17) on, so "0" (0x30 = "!" + 15) is 32 and digit d is 32 + d.
    tok = T.smollm2()
    assert [tok.tokens[32 + d] for d in range(10)] == list("0123456789")
    assert T.encode("2025") == [34, 32, 34, 37]
    assert T.tokens(" 42") == [(" ", 216), ("4", 36), ("2", 34)]


def test_special_tokens_are_single_tokens():
    assert T.encode("<|im_start|>user\nhi<|im_end|>") == [1, 4093, 198, 6004, 2]
    assert T.encode("<|endoftext|>") == [0]
    assert T.encode("<|im_start") != [1]  # an incomplete special token is ordinary text
    assert T.decode([1, 2, 0]) == "<|im_start|><|im_end|><|endoftext|>"


def test_no_bos_and_empty():
    assert T.encode("") == []
    assert T.decode([]) == ""
    assert T.smollm2().meta["add_bos_token"] is False
    # Loaded once (each load decompresses and parses the whole table, about 0.5 s; in Pyodide,
    # reloading on every encode() ran out of memory in the property tests): the same object every call.
    assert T.smollm2() is T.smollm2()


def test_strawberry_is_three_tokens():
    # The famous letter-counting trap: the model never sees letters, it sees "st" + "raw" + "berry".
    assert T.tokens("strawberry") == [("st", 302), ("raw", 1709), ("berry", 9500)]


def test_chat_template_by_hand():
    expected = (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert T.apply_chat_template([{"role": "user", "content": "Hi"}]) == expected
    own_system = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert T.apply_chat_template(own_system, add_generation_prompt=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    )


def test_bad_input():
    with pytest.raises(ValueError, match="text must be a string"):
        T.encode(None)
    with pytest.raises(ValueError, match="token id must be an integer 0 to 49151"):
        T.decode([49152])
    with pytest.raises(ValueError, match="token id"):
        T.decode([-1])
    with pytest.raises(ValueError, match=r"role must be one of system, user, assistant"):
        T.apply_chat_template([{"role": "robot", "content": "x"}])
    with pytest.raises(ValueError, match="messages"):
        T.apply_chat_template([])


def test_data_file_matches_the_gguf_counts():
    # GGUF metadata: 49,152 tokens (llama.vocab_size), 48,900 merges, 17 control tokens (ids 0..16).
    raw = resources.files("descent").joinpath("data", T.DATA_FILE).read_bytes()
    assert len(raw) < 1_000_000  # compact enough to ship in the browser wheel
    data = json.loads(gzip.decompress(raw))
    assert len(data["tokens"]) == 49152 and len(data["merges"]) == 48900
    assert data["special_ids"] == list(range(17))
    assert data["pre"] == "smollm"


def test_dropped_control_bytes():
    # Bytes 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D have no vocabulary entry; the reference drops them too.
    # "a", "\x1d", "b" are three pre-tokens (a control character is neither letter nor space), so
    # the result is "a"(81) + nothing + "b"(82), not the merged "ab"(369).
    assert T.encode("a\x1db") == [81, 82]
    assert T.encode("ab") == [369]


#: Characters whose byte has no token (the reference drops them too).
DROPPED_CONTROLS = "\x04\x06\x13\x14\x16\x1d"
#: Code points U+40000..U+BFFFF start with UTF-8 byte 0xF1 or 0xF2, which have no token; below them all round-trip.
LAST_WHOLE_CODEPOINT = 0x3FFFF


def test_missing_bytes():
    # The 21 byte values without a token, read from the vocabulary.
    tok = T.smollm2()
    missing = sorted(b for b, s in T.BYTE_TO_SYMBOL.items() if s not in tok.ids)
    assert missing == [0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, *range(0xF5, 0x100)]


def _round_trips(text: str) -> bool:
    return T.decode(T.encode(text)) == text


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.characters(
            blacklist_characters=DROPPED_CONTROLS,
            blacklist_categories=("Cs",),
            max_codepoint=LAST_WHOLE_CODEPOINT,
        )
    )
)
def test_decode_inverts_encode(text):
    assert _round_trips(text)


# --------------------------------------------------------------------------- peer: transformers on the GGUF

HARD_STRINGS = [
    "",
    "The capital of France is",
    "strawberry",
    "Strawbery recieve definately seperate occured",
    "3.14159, 2,718! 1+1=2; $100.00 (USD) 12:30pm 2024-03-15",
    "  1",
    "a  1",
    "x\n\n1",
    "   leading",
    "trailing   ",
    "a\n\n\n b\t\tc",
    " \n \n",
    "\r\n\r\n",
    "héllo wörld 🤗 你好世界 नमस्ते दुनिया",
    "👨‍👩‍👧 🇫🇷 ❤️",
    "don't I'm you'll we've she'd THEY'RE",
    "½ ² ٣ Ⅻ",
    "\u00a0x\u2003y\u3000z",
    "\x1c\x1d a\x1fb",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|><|endoftext|>x",
    "<|im_start",
    "<<|im_end|>>",
    "Ǆ ǅ ǆ",
    "def f(x):\n    return x**2  # square\n",
]


@functools.lru_cache(maxsize=1)
def _reference():
    """(patched reference, unpatched reference): transformers' tokenizer from the GGUF, loaded once."""
    transformers = pytest.importorskip("transformers")
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    from descent.trace.gguf_reader import gguf_path

    path = gguf_path()
    unpatched = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    patched = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    patched.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    return patched, unpatched


def _ref_ids(tok, text):
    return tok.backend_tokenizer.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def reference():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return _reference()


@pytest.mark.peer
@pytest.mark.parametrize("text", HARD_STRINGS)
def test_ids_equal_the_reference(reference, text):
    patched, _ = reference
    assert T.encode(text) == _ref_ids(patched, text)
    assert T.decode(T.encode(text)) == patched.decode(_ref_ids(patched, text), skip_special_tokens=False)


@pytest.mark.peer
def test_unpatched_reference_gap(reference):
    # Where plain GPT-2 splitting differs: whitespace runs and number symbols. " 1" splits as " "+"1"
    # either way, but "  1" is "ĠĠ"(256) + "1"(33) with digits split first, "Ġ"+"Ġ"+"1" without.
    patched, unpatched = reference
    assert T.encode("  1") == _ref_ids(patched, "  1") == [256, 33]
    assert _ref_ids(unpatched, "  1") == [216, 216, 33]
    # With no digit after whitespace, the two agree.
    assert _ref_ids(unpatched, "The capital of France is 42") == T.encode("The capital of France is 42")


@pytest.mark.peer
def test_chat_template_equals_the_reference(reference):
    patched, _ = reference
    messages = [{"role": "user", "content": "What is the tallest mountain in the world?"}]
    ref = patched.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert T.apply_chat_template(messages) == ref


@pytest.mark.peer
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_random_text_ids_equal_the_reference(text):
    patched, _ = _reference()
    assert T.encode(text) == _ref_ids(patched, text)


# --------------------------------------------------------------------------- the same code in Pyodide

_PYODIDE_SCRIPT = r"""
const [pyodideDir, wheelPath, texts] = process.argv.slice(2);
const { loadPyodide } = await import(pyodideDir + "/pyodide.mjs");
const { readFileSync } = await import("node:fs");
const pyodide = await loadPyodide({ indexURL: pyodideDir + "/" });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheelPath)), "wheel");
pyodide.globals.set("TEXTS", texts);
process.stdout.write(pyodide.runPython(`
import json, sys
from descent import tokenizer, sampling
json.dumps({"ids": [tokenizer.encode(t) for t in json.loads(TEXTS)],
            "numpy": "numpy" in sys.modules,
            "draw": sampling.sample([0.0, 1.0, 2.0], temperature=1.0, seed=0)})
`));
"""


@pytest.mark.slow
@pytest.mark.pyodide
def test_same_ids_in_pyodide(tmp_path):
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pyodide_dir = root / "node_modules" / "pyodide"
    node = shutil.which("node")
    if node is None or not (pyodide_dir / "pyodide.mjs").is_file():
        pytest.skip("node or node_modules/pyodide missing")
    from descent.site import runtime

    wheel = runtime.build_wheel(root, tmp_path)
    script = tmp_path / "run.mjs"
    script.write_text(_PYODIDE_SCRIPT)
    proc = subprocess.run(
        [node, str(script), str(pyodide_dir), str(wheel), json.dumps(HARD_STRINGS)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    assert res["ids"] == [T.encode(t) for t in HARD_STRINGS]  # CPython 3.11 and Pyodide's 3.14 agree
    assert res["numpy"] is False
    from descent import sampling

    assert res["draw"] == sampling.sample([0.0, 1.0, 2.0], temperature=1.0, seed=0)  # same PRNG stream


def test_the_tokenizer_is_loaded_once():
    # Issue 13, speed: the widget asks for it on every keystroke; loading it takes about 0.5 s
    # in CPython and several seconds in Pyodide, so a second call must not load it again.
    from descent import tokenizer as tk

    assert tk.smollm2() is tk.smollm2()
