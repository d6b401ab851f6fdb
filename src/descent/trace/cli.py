"""``descent trace`` and ``descent generate``: the real model from the command line.

    descent trace "PROMPT" [--chat] [--top K] [--json]
    descent generate "PROMPT" [--chat] --max-tokens N [--temperature T] [--top-k K] [--top-p P] [--seed S]

``descent.cli`` calls :func:`add_subcommands`. Each handler checks its settings (raising ``ValueError``
with the allowed range, which the main CLI prints as one line and exits 2) before loading the model,
and imports NumPy and the model code only when it runs, so ``descent --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys

from descent import params as P
from descent.units import format_int, format_number, visible_controls, visible_whitespace

#: Default number of next tokens ``descent trace`` lists.
DEFAULT_TOP = 10
#: Default number of tokens ``descent generate`` writes at most.
DEFAULT_MAX_TOKENS = 32

PROMPT_TEXT = P.declare(P.Param(
    "prompt", "PROMPT", "text", key="prompt_text", max_length=P.TEXT_MAX_LENGTH_LIMIT,
    help="the text (or, with --chat, the user's message)",
))
CHAT = P.declare(P.Param("chat", "Chat template", "bool", False,
                         help="wrap the prompt in SmolLM2's chat template"))
TOP = P.declare(P.Param("top", "--top", "int", DEFAULT_TOP, key="trace_top", min=1, max=1000, unit="tokens",
                        help="next tokens to list"))
MAX_TOKENS = P.declare(P.Param("max_tokens", "--max-tokens", "int", DEFAULT_MAX_TOKENS, min=1, max=4096,
                               unit="tokens", help="tokens to generate at most"))
#: ``generate`` is greedy unless asked: temperature 0, no top-k or top-p cut (top-k = the whole
#: vocabulary and top-p = 1 keep every token).
GEN_TEMPERATURE = P.TEMPERATURE.but(default=0.0, label="--temperature",
                                    help="0 is greedy (always the most likely token); higher draws more freely")
GEN_TOP_K = P.TOP_K.but(label="--top-k", default=P.TOP_K.max, help="keep the K most likely tokens")
GEN_TOP_P = P.TOP_P.but(label="--top-p", help="keep the smallest set of tokens whose probability adds up to P")
GEN_SEED = P.SEED.but(label="--seed", help="seed of the random draws (same seed, same text)")


def _show(token_id: int) -> str:
    """A token as the CLI prints it: whitespace made visible (␣ ↵ ⇥) and bytes that are only part of a
    character as ``<0xE6>`` (:meth:`descent.tokenizer.Tokenizer.display`)."""
    from descent import tokenizer

    return visible_whitespace(tokenizer.smollm2().display(token_id))


def _check_prompt(prompt: str) -> None:
    if not prompt:
        raise ValueError("PROMPT must be non-empty text")


def _check_context(prompt_tokens: int, max_tokens: int) -> None:
    """Prompt plus answer must fit the model's context: checked before any token is computed.

    Raises:
        ValueError: one line with the counts and what to change.
    """
    from descent.trace.gguf_reader import load_model

    context = load_model().config.context_length  # 8,192 for SmolLM2 (GGUF llama.context_length)
    if prompt_tokens + max_tokens <= context:
        return
    room = context - prompt_tokens
    fix = f"use --max-tokens {format_int(room)} or less, or a shorter prompt" if room >= 1 else "shorten the prompt"
    raise ValueError(
        f"the prompt is {format_int(prompt_tokens)} tokens and --max-tokens is {format_int(max_tokens)}: "
        f"{format_int(prompt_tokens + max_tokens)} tokens, more than the model's context of "
        f"{format_int(context)} tokens; {fix}"
    )


def _cmd_trace(args: argparse.Namespace) -> int:
    _check_prompt(args.prompt)
    from descent.trace.record import trace

    result = trace(args.prompt, chat=args.chat, top=args.top, max_new_tokens=0)
    if args.json:
        print(json.dumps({"tokens": result["tokens"], "next": result["next"]}, ensure_ascii=False))
        return 0
    print(f"{format_int(len(result['tokens']))} tokens:")
    for t in result["tokens"]:
        print(f"  {t['id']:>6}  {_show(t['id'])}")
    print(
        f"next token (top {args.top} of {format_int(result['model']['vocab'])}; "
        f"entropy {format_number(result['entropy_bits'], 3)} bits):"
    )
    for t in result["next"]:
        print(f"  {t['id']:>6}  {_show(t['id']):<16} p = {format_number(t['probability'], 4)}  "
              f"logit = {format_number(t['logit'], 4)}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from descent import sampling, tokenizer
    from descent.trace.forward import MAX_NEW_TOKENS

    _check_prompt(args.prompt)
    if args.max_tokens > MAX_NEW_TOKENS:
        raise ValueError(f"--max-tokens must be 1 to {MAX_NEW_TOKENS}, got {args.max_tokens}")
    top_k = None if args.top_k >= tokenizer.vocab_size() else args.top_k
    top_p = None if args.top_p >= 1 else args.top_p
    sampling.validate(temperature=args.temperature, top_k=top_k, top_p=top_p, vocab_size=tokenizer.vocab_size())

    from descent.trace.forward import generate
    from descent.trace.record import prompt_text, stop_ids

    tok = tokenizer.smollm2()
    ids = tok.encode(prompt_text(args.prompt, args.chat))
    _check_context(len(ids), args.max_tokens)
    out: list[int] = []
    shown = ""
    stops = stop_ids()
    for step in generate(
        ids, args.max_tokens, args.temperature, top_k, top_p, args.seed, stop_ids=stops
    ):
        if step.token in stops:
            break
        out.append(step.token)
        text = tok.decode(out)
        if not text.endswith("\ufffd"):  # wait for the rest of a multi-byte character
            sys.stdout.write(visible_controls(text[len(shown) :]))  # a reply's ESC or BEL never reaches the terminal
            sys.stdout.flush()
            shown = text
    sys.stdout.write(visible_controls(tok.decode(out)[len(shown) :]) + "\n")
    return 0


def add_subcommands(subparsers) -> None:
    """Add ``trace`` and ``generate`` to the ``descent`` command's subparsers; every flag comes from
    a declared parameter (:func:`descent.params.add_argument`)."""
    p = subparsers.add_parser("trace", help="tokens of a prompt and SmolLM2's most likely next tokens")
    P.add_argument(p, PROMPT_TEXT, positional=True, metavar="PROMPT")
    P.add_argument(p, CHAT)
    P.add_argument(p, TOP)
    P.add_argument(p, P.JSON.but(help='print {"tokens": [...], "next": [...]}'))
    p.set_defaults(func=_cmd_trace)

    p = subparsers.add_parser("generate", help="continue a prompt with SmolLM2 (greedy or sampled)")
    P.add_argument(p, PROMPT_TEXT, positional=True, metavar="PROMPT")
    P.add_argument(p, CHAT)
    for param in (MAX_TOKENS, GEN_TEMPERATURE, GEN_TOP_K, GEN_TOP_P, GEN_SEED):
        P.add_argument(p, param)
    p.set_defaults(func=_cmd_generate)
