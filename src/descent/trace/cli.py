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

#: Default number of next tokens ``descent trace`` lists.
DEFAULT_TOP = 10


def _number(kind: type, allowed: str):
    """An argparse ``type`` that parses an int or float and, on failure, says what is allowed."""

    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None

    parse.__name__ = kind.__name__
    return parse


def _check_prompt(prompt: str) -> None:
    if not prompt:
        raise ValueError("PROMPT must be non-empty text")


def _cmd_trace(args: argparse.Namespace) -> int:
    from descent.trace.record import MAX_TOP

    _check_prompt(args.prompt)
    if not 1 <= args.top <= MAX_TOP:
        raise ValueError(f"--top must be 1 to {MAX_TOP} tokens, got {args.top}")
    from descent.trace.record import trace

    result = trace(args.prompt, chat=args.chat, top=args.top, max_new_tokens=0)
    if args.json:
        print(json.dumps({"tokens": result["tokens"], "next": result["next"]}, ensure_ascii=False))
        return 0
    print(f"{len(result['tokens'])} tokens:")
    for t in result["tokens"]:
        print(f"  {t['id']:>6}  {t['text']!r}")
    print(
        f"next token (top {args.top} of {result['model']['vocab']:,}; entropy {result['entropy_bits']:.3g} bits):"
    )
    for t in result["next"]:
        print(f"  {t['id']:>6}  {t['text']!r:<16} p = {t['probability']:.4f}  logit = {t['logit']:.3f}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from descent import sampling, tokenizer
    from descent.trace.forward import MAX_NEW_TOKENS

    _check_prompt(args.prompt)
    if not 1 <= args.max_tokens <= MAX_NEW_TOKENS:
        raise ValueError(f"--max-tokens must be 1 to {MAX_NEW_TOKENS}, got {args.max_tokens}")
    for flag, value, check in (
        ("--temperature", args.temperature, lambda: sampling.validate(temperature=args.temperature)),
        (
            "--top-k",
            args.top_k,
            lambda: sampling.validate(top_k=args.top_k, vocab_size=tokenizer.vocab_size()),
        ),
        ("--top-p", args.top_p, lambda: sampling.validate(top_p=args.top_p)),
    ):
        if value is not None:
            try:
                check()
            except ValueError as e:
                raise ValueError(f"{flag}: {e}") from None

    from descent.trace.forward import generate
    from descent.trace.record import prompt_text, stop_ids

    tok = tokenizer.smollm2()
    ids = tok.encode(prompt_text(args.prompt, args.chat))
    out: list[int] = []
    shown = ""
    stops = stop_ids()
    for step in generate(
        ids, args.max_tokens, args.temperature, args.top_k, args.top_p, args.seed, stop_ids=stops
    ):
        if step.token in stops:
            break
        out.append(step.token)
        text = tok.decode(out)
        if not text.endswith("\ufffd"):  # wait for the rest of a multi-byte character
            sys.stdout.write(text[len(shown) :])
            sys.stdout.flush()
            shown = text
    sys.stdout.write(tok.decode(out)[len(shown) :] + "\n")
    return 0


def add_subcommands(subparsers) -> None:
    """Add ``trace`` and ``generate`` to the ``descent`` command's subparsers."""
    p = subparsers.add_parser("trace", help="tokens of a prompt and SmolLM2's most likely next tokens")
    p.add_argument("prompt", metavar="PROMPT", help="the text (or, with --chat, the user's message)")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in SmolLM2's chat template")
    p.add_argument(
        "--top",
        type=_number(int, "an integer 1 to 1000"),
        default=DEFAULT_TOP,
        help=f"next tokens to list, 1 to 1000; default {DEFAULT_TOP}",
    )
    p.add_argument("--json", action="store_true", help='print {"tokens": [...], "next": [...]}')
    p.set_defaults(func=_cmd_trace)

    p = subparsers.add_parser("generate", help="continue a prompt with SmolLM2 (greedy or sampled)")
    p.add_argument("prompt", metavar="PROMPT", help="the text (or, with --chat, the user's message)")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in SmolLM2's chat template")
    p.add_argument(
        "--max-tokens",
        type=_number(int, "an integer 1 to 4096"),
        required=True,
        help="tokens to generate at most, 1 to 4096",
    )
    p.add_argument(
        "--temperature",
        type=_number(float, "a number 0 to 5"),
        default=0.0,
        help="0 (greedy, the default) to 5",
    )
    p.add_argument(
        "--top-k",
        type=_number(int, "an integer 1 to 49152"),
        default=None,
        help="keep the K most likely tokens, 1 to 49152",
    )
    p.add_argument(
        "--top-p",
        type=_number(float, "a number above 0 and at most 1"),
        default=None,
        help="keep the smallest set with mass P, 0 < P <= 1",
    )
    p.add_argument(
        "--seed",
        type=_number(int, "an integer"),
        default=None,
        help="seed of the random draws (same seed, same text)",
    )
    p.set_defaults(func=_cmd_generate)
