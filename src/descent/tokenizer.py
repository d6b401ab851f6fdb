"""Byte-level BPE: SmolLM2's tokenizer in plain Python (runs in CPython and in Pyodide).

Text becomes token ids in four steps, each a small function below:

1. **Special tokens.** The control tokens of the vocabulary (``<|endoftext|>``, ``<|im_start|>``,
   ``<|im_end|>`` and the other 14 that SmolLM2 reserves) are cut out of the text first and become
   one id each, wherever they appear.
2. **Pre-tokenization.** The rest is split into pieces with the rules that GGUF's
   ``tokenizer.ggml.pre = "smollm"`` names: every number character (Unicode category N*) is a piece
   of its own, then GPT-2's split (contractions, optional space + letters, optional space + digits,
   optional space + other symbols, runs of whitespace). Python's ``re`` has no ``\\p{L}``, so the
   split is written out by hand over ``unicodedata`` categories.
3. **Bytes to symbols.** Each piece's UTF-8 bytes are spelled with GPT-2's byte-to-unicode map (a
   space is ``Ġ``, a newline ``Ċ``), so every byte is one printable symbol.
4. **Merges.** Adjacent symbols are merged, lowest-ranked pair first, until no pair of the merge table
   applies; each final symbol string is a vocabulary entry.

Sources: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners", sec. 2.2
(byte-level BPE); Sennrich et al. 2016, "Neural Machine Translation of Rare Words with Subword
Units", sec. 3.2 (the merge loop); llama.cpp ``llama-vocab.cpp``, pre-tokenizer type ``SMOLLM``
(the regexes ``\\p{N}`` then GPT-2's); SmolLM2's ``tokenizer.json`` (``Digits(individual_digits)``
then ``ByteLevel``). The vocabulary (49,152 tokens), the 48,900 merges, the special tokens and the chat
template are exported from ``SmolLM2-135M-Instruct.Q4_1.gguf`` by ``python -m
descent.trace.export_tokenizer`` into ``descent/data/smollm2_tokenizer.json.gz``.

The model adds no BOS token (GGUF ``tokenizer.ggml.add_bos_token = false``): ``encode`` adds nothing.
"""

from __future__ import annotations

import codecs
import functools
import gzip
import json
import unicodedata
from importlib import resources

from descent.checks import is_int

#: Package-data file holding the vocabulary, merges, special tokens and chat template.
DATA_FILE = "smollm2_tokenizer.json.gz"

#: GGUF ``tokenizer.ggml.token_type`` value of a control (special) token (llama.cpp ``LLAMA_TOKEN_TYPE_CONTROL``).
TOKEN_TYPE_CONTROL = 3

#: GPT-2's contractions, matched case-sensitively after an apostrophe, in the regex's order.
CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")

#: Characters that the reference regex engine (Oniguruma, used by Hugging Face ``tokenizers``) counts as
#: ``\\s`` besides the Unicode separators Zs, Zl, Zp: tab, LF, VT, FF, CR and NEL.
#: Python's ``str.isspace`` also accepts U+001C..U+001F, which ``\\s`` does not.
EXTRA_WHITESPACE = frozenset("\t\n\x0b\x0c\r\x85")


# ---------------------------------------------------------------------------- character classes


def _is_space(ch: str) -> bool:
    """``\\s``: tab, LF, VT, FF, CR, NEL or a Unicode separator (Zs, Zl, Zp)."""
    return ch in EXTRA_WHITESPACE or unicodedata.category(ch) in ("Zs", "Zl", "Zp")


def _is_letter(ch: str) -> bool:
    """``\\p{L}``: Unicode categories Lu, Ll, Lt, Lm, Lo."""
    return unicodedata.category(ch).startswith("L")


def _is_number(ch: str) -> bool:
    """``\\p{N}``: Unicode categories Nd, Nl, No (so '²', '½' and Arabic-Indic digits count too)."""
    return unicodedata.category(ch).startswith("N")


def _is_other(ch: str) -> bool:
    """``[^\\s\\p{L}\\p{N}]``: punctuation, symbols, emoji, controls."""
    return not (_is_space(ch) or _is_letter(ch) or _is_number(ch))


# ---------------------------------------------------------------------------- pre-tokenizer


def split_digits(text: str) -> list[str]:
    """First rule of ``smollm``: every number character becomes a piece of its own.

    ``"ab12 c"`` -> ``["ab", "1", "2", " c"]``. Empty text gives ``[]``.
    """
    pieces: list[str] = []
    run = ""
    for ch in text:
        if _is_number(ch):
            if run:
                pieces.append(run)
                run = ""
            pieces.append(ch)
        else:
            run += ch
    if run:
        pieces.append(run)
    return pieces


def _run(text: str, start: int, test) -> int:
    """End index of the run of characters from ``start`` that satisfy ``test``."""
    end = start
    while end < len(text) and test(text[end]):
        end += 1
    return end


def gpt2_split(text: str) -> list[str]:
    """GPT-2's pre-tokenizer regex, written out by hand. The alternatives, tried in order at each position:

    ``'s|'t|'re|'ve|'m|'ll|'d | ?\\p{L}+ | ?\\p{N}+ | ?[^\\s\\p{L}\\p{N}]+ | \\s+(?!\\S) | \\s+``

    The whitespace rule keeps the last space of a run for the word that follows it:
    ``"a   b"`` -> ``["a", "  ", " b"]``. Source: Radford et al. 2019, sec. 2.2; openai/gpt-2 ``encoder.py``.
    """
    pieces: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        end = i
        if ch == "'":  # contractions
            for tail in CONTRACTIONS:
                if text.startswith(tail, i + 1):
                    end = i + 1 + len(tail)
                    break
        if end == i:
            # An optional leading space, then a run of one class (letters, numbers or other symbols).
            body = i + 1 if ch == " " and i + 1 < n else i
            for test in (_is_letter, _is_number, _is_other):
                if test(text[body]):
                    end = _run(text, body, test)
                    break
        if end == i:  # whitespace: \s+(?!\S), else \s+
            run_end = _run(text, i, _is_space)
            if run_end == n or run_end - i == 1:
                end = run_end
            else:
                end = run_end - 1  # leave the last space to start the next piece
        pieces.append(text[i:end])
        i = end
    return pieces


def pre_tokenize(text: str) -> list[str]:
    """The ``smollm`` pre-tokenizer: :func:`split_digits`, then :func:`gpt2_split` inside each piece.

    ``"I have 12 cats"`` -> ``["I", " have", " ", "1", "2", " cats"]``.
    """
    return [part for piece in split_digits(text) for part in gpt2_split(piece)]


# ---------------------------------------------------------------------------- bytes <-> symbols


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each of the 256 byte values to a printable character.

    Printable Latin-1 bytes map to themselves; the other 68 (controls, space, ...) map to U+0100 onward,
    in byte order, so space (0x20) becomes 'Ġ' (U+0120) and newline (0x0A) 'Ċ' (U+010A).
    Source: openai/gpt-2 ``src/encoder.py``, ``bytes_to_unicode``.
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping: dict[int, str] = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


BYTE_TO_SYMBOL: dict[int, str] = bytes_to_unicode()
SYMBOL_TO_BYTE: dict[str, int] = {s: b for b, s in BYTE_TO_SYMBOL.items()}


# ---------------------------------------------------------------------------- the tokenizer


class Tokenizer:
    """A byte-level BPE tokenizer over a vocabulary and a ranked merge table.

    ``tokens``: the vocabulary, index = token id, spelled in GPT-2's byte symbols (``"Ġthe"``), with
    special tokens spelled as themselves. ``merges``: pairs ``"a b"`` best first. ``special_ids``: ids of
    the control tokens matched whole in the text.
    """

    def __init__(
        self, tokens: list[str], merges: list[str], special_ids: list[int], meta: dict | None = None
    ):
        self.tokens = list(tokens)
        self.ids = dict(zip(self.tokens, range(len(self.tokens)), strict=True))
        # Keyed by the merge's own text "a b" (a symbol is never a space: bytes_to_unicode spells
        # it Ġ), not by a split pair: built in a third of the time (7 ms against 20 in CPython).
        self.ranks = dict(zip(merges, range(len(merges)), strict=True))
        self.special = {self.tokens[i]: i for i in special_ids}
        # Longest first, so a special token that is a prefix of another cannot win.
        self._special_order = sorted(self.special, key=len, reverse=True)
        self.meta = dict(meta or {})
        self._bpe = functools.lru_cache(maxsize=65536)(self._bpe_uncached)

    @property
    def vocab_size(self) -> int:
        """Number of tokens V (49,152 for SmolLM2)."""
        return len(self.tokens)

    # -- encoding

    def split_special(self, text: str) -> list[tuple[str, bool]]:
        """Cut ``text`` at special tokens: ``[(chunk, is_special), ...]`` in order, no empty chunks."""
        out: list[tuple[str, bool]] = []
        i = start = 0
        while i < len(text):
            if text[i] == "<":
                hit = next((s for s in self._special_order if text.startswith(s, i)), None)
                if hit is not None:
                    if i > start:
                        out.append((text[start:i], False))
                    out.append((hit, True))
                    i = start = i + len(hit)
                    continue
            i += 1
        if start < len(text):
            out.append((text[start:], False))
        return out

    def _bpe_uncached(self, piece: str) -> tuple[int, ...]:
        """Merge the byte symbols of one pre-token, lowest-ranked pair first (Sennrich et al. 2016, sec. 3.2)."""
        # 21 byte values have no token in SmolLM2's vocabulary: six controls (0x04, 0x06, 0x13, 0x14, 0x16,
        # 0x1D), 0xC0, 0xC1 and 0xF5..0xFF (never in UTF-8) and the lead bytes 0xF1, 0xF2 (U+40000..U+BFFFF);
        # like the reference (Hugging Face ``tokenizers`` BPE without an unknown token) they are dropped
        # before merging, so "{\x16{" merges to "{{".
        word = [BYTE_TO_SYMBOL[b] for b in piece.encode("utf-8") if BYTE_TO_SYMBOL[b] in self.ids]
        while len(word) > 1:
            pairs = [(word[k], word[k + 1]) for k in range(len(word) - 1)]
            ranked = [(rank, pair) for pair in pairs if (rank := self.ranks.get(f"{pair[0]} {pair[1]}")) is not None]
            if not ranked:
                break
            first, second = min(ranked)[1]  # the best-ranked (earliest learned) merge
            merged: list[str] = []
            k = 0
            while k < len(word):
                if k + 1 < len(word) and word[k] == first and word[k + 1] == second:
                    merged.append(first + second)
                    k += 2
                else:
                    merged.append(word[k])
                    k += 1
            word = merged
        return tuple(self.ids[symbol] for symbol in word)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (list of ints, each 0..V-1). No BOS is added. Empty text gives ``[]``.

        Bytes without a vocabulary entry are dropped, as the reference tokenizer drops them: the control
        characters U+0004, U+0006, U+0013, U+0014, U+0016, U+001D, and the UTF-8 lead bytes 0xF1, 0xF2 of
        code points U+40000..U+BFFFF (planes 4 to 11, all unassigned), whose continuation bytes then
        decode as U+FFFD.

        Raises ``ValueError`` if ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a string, got {type(text).__name__}")
        ids: list[int] = []
        for chunk, is_special in self.split_special(text):
            if is_special:
                ids.append(self.special[chunk])
            else:
                for piece in pre_tokenize(chunk):
                    ids.extend(self._bpe(piece))
        return ids

    # -- decoding

    def _check_ids(self, ids) -> None:
        for i in ids:
            if not is_int(i) or not 0 <= i < self.vocab_size:
                raise ValueError(f"token id must be an integer 0 to {self.vocab_size - 1}, got {i!r}")

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes of one token (a special token gives its own spelling in UTF-8)."""
        self._check_ids([token_id])
        tok = self.tokens[token_id]
        if tok in self.special:
            return tok.encode("utf-8")
        return bytes(SYMBOL_TO_BYTE[s] for s in tok)

    def display(self, token_id: int) -> str:
        """One token's text for display: its bytes decoded as UTF-8, and any byte that is only part
        of a character shown as ``<0xE6>`` instead of U+FFFD (a Chinese character or an emoji is often
        split across two or three tokens, none of which is text on its own).

        Raises ``ValueError`` for an id outside 0..V-1.
        """
        return self.token_bytes(token_id).decode("utf-8", errors=HEX_BYTES)

    def decode(self, ids) -> str:
        """The text of a list of token ids; bytes that are not valid UTF-8 become U+FFFD.

        Special tokens are kept as their text (``<|im_end|>``). Raises ``ValueError`` for an id outside 0..V-1.
        """
        ids = list(ids)
        self._check_ids(ids)
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def tokens_of(self, text: str) -> list[tuple[str, int]]:
        """``[(token text, id), ...]``: each token decoded on its own (a leading space stays a space).

        A token holding part of a multi-byte character shows as U+FFFD.
        """
        return [(self.decode([i]), i) for i in self.encode(text)]

    # -- chat

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """The ChatML text the model was tuned on, as SmolLM2's template writes it.

        ``messages``: ``[{"role": "user", "content": "..."}, ...]``; roles system, user or assistant. If
        the first message is not a system message, SmolLM2's default system message comes first.
        Each message is ``<|im_start|>{role}\\n{content}<|im_end|>\\n``; with ``add_generation_prompt``
        the text ends with ``<|im_start|>assistant\\n``. Source: the GGUF's ``tokenizer.chat_template``.
        Raises ``ValueError`` for an empty list, an unknown role or non-string content.
        """
        if not isinstance(messages, (list, tuple)) or not messages:
            raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
        start, end = self.meta["im_start"], self.meta["im_end"]
        parts = []
        for k, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in CHAT_ROLES:
                raise ValueError(f"messages[{k}].role must be one of {', '.join(CHAT_ROLES)}")
            if not isinstance(message.get("content"), str):
                raise ValueError(f"messages[{k}].content must be a string")
            if k == 0 and message["role"] != "system":
                parts.append(f"{start}system\n{self.meta['default_system']}{end}\n")
            parts.append(f"{start}{message['role']}\n{message['content']}{end}\n")
        if add_generation_prompt:
            parts.append(f"{start}assistant\n")
        return "".join(parts)


#: Roles the chat template accepts.
CHAT_ROLES = ("system", "user", "assistant")


def _hex_bytes(err: UnicodeDecodeError) -> tuple[str, int]:
    return "".join(f"<0x{b:02X}>" for b in err.object[err.start:err.end]), err.end


#: A codec error handler: bytes that are not (complete) UTF-8 become ``<0xE6>`` markers.
HEX_BYTES = "descent-hex-bytes"
codecs.register_error(HEX_BYTES, _hex_bytes)


@functools.lru_cache(maxsize=1)
def smollm2() -> Tokenizer:
    """SmolLM2-135M-Instruct's tokenizer, loaded once from the package data (about 0.5 s; every
    later call returns the same object: the tokenizer widget calls it on each keystroke)."""
    raw = resources.files("descent").joinpath("data", DATA_FILE).read_bytes()
    data = json.loads(gzip.decompress(raw).decode("utf-8"))
    meta = {k: v for k, v in data.items() if k not in ("tokens", "merges")}
    return Tokenizer(data["tokens"], data["merges"], data["special_ids"], meta)


def encode(text: str) -> list[int]:
    """SmolLM2 token ids of ``text`` (see :meth:`Tokenizer.encode`)."""
    return smollm2().encode(text)


def decode(ids) -> str:
    """Text of SmolLM2 token ids (see :meth:`Tokenizer.decode`)."""
    return smollm2().decode(ids)


def tokens(text: str) -> list[tuple[str, int]]:
    """``[(token text, id), ...]`` for ``text`` with SmolLM2's tokenizer (see :meth:`Tokenizer.tokens_of`)."""
    return smollm2().tokens_of(text)


def fragments(pieces: list[tuple[str, int]]) -> tuple[int, int]:
    """``(whole, fragments)`` of a split (:func:`tokens`): tokens that decode to whole characters,
    and tokens that hold only some of one character's bytes (their text shows U+FFFD)."""
    broken = sum(1 for t, _ in pieces if "\ufffd" in t)
    return len(pieces) - broken, broken


def apply_chat_template(messages: list[dict], add_generation_prompt: bool = True) -> str:
    """SmolLM2's chat text for ``messages`` (see :meth:`Tokenizer.apply_chat_template`)."""
    return smollm2().apply_chat_template(messages, add_generation_prompt)


def vocab_size() -> int:
    """SmolLM2's vocabulary size V (49,152 tokens; GGUF ``llama.vocab_size``)."""
    return smollm2().vocab_size
