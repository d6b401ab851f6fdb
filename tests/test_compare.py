"""Two set-ups side by side (issue 26, Compare): ``descent.memory.compare`` and the sizing sandbox's
pinned set-up (``descent.widgets.part5``: the ``pinned`` input that share.js's Pin button fills).

Expected values are ``descent.memory.size`` at each set-up, computed here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from descent import widgets
from descent.memory import COMPARED, compare, size
from descent.widgets.part5 import parse_pinned, rate_text

ROOT = Path(__file__).resolve().parent.parent


def test_compare_gives_both_values_their_ratio_and_the_better_one():
    h100 = size("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1)
    h200 = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    rows = {c.field: c for c in compare(h100, h200)}
    assert [f for f, _, _ in COMPARED] + ["fits"] == list(rows)
    d = rows["decode_tokens_per_s"]
    assert (d.before, d.after) == (h100.decode_tokens_per_s, h200.decode_tokens_per_s)
    assert d.ratio == pytest.approx(h200.decode_tokens_per_s / h100.decode_tokens_per_s)
    assert d.better == "after"  # the H200's 4.8 TB/s beat the H100's 3.35 TB/s
    assert rows["weights_bytes"].better == ""  # same model, same format: the same bytes
    assert rows["need_bytes"].better == ""  # weights + KV cache: the same on every chip
    assert rows["free_bytes"].better == "after"  # 141 GiB leave more free than 80 GiB
    # Fitting is better: 405B in BF16 fits on neither, 8B fits on both.
    big = size("llama-3.1-405b", "h200", "bf16", "bf16", 8192, 1)
    assert {c.field: c.better for c in compare(big, h200)}["fits"] == "after"


def test_the_sandbox_shows_the_pinned_set_up_beside_the_current_one():
    r = widgets.run("size_it_yourself", {"pinned": "model:llama-3.1-70b;accelerator:h100-sxm", "accelerator": "h200"})
    assert r["ok"], r
    h100 = size("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1)
    h200 = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    text = re.sub(r"<[^>]+>", "|", r["html"])
    row = re.search(r"Decode ceiling per sequence, tokens/s\|+([^|]+)\|+([^|]+)\|+([^|]+)\|+([^|]+)\|", text).groups()
    assert row[0] == rate_text(h100.decode_tokens_per_s)
    assert row[1] == rate_text(h200.decode_tokens_per_s)
    assert row[3] == "now"
    # Without a pinned set-up there is no comparison.
    assert "Pinned set-up" not in widgets.run("size_it_yourself", {})["html"]


@pytest.mark.parametrize("text, message", [
    ("colour:blue", "the field one of model, weights"),
    ("context:0", "Context must be 1 to 20,000,000 tokens, got 0"),
    ("model:custom", "Model must be one of"),
    ("just text", "each part is field:value"),
])
def test_a_bad_pinned_set_up_gets_a_message_under_its_field(text, message):
    r = widgets.run("size_it_yourself", {"pinned": text})
    assert not r["ok"] and r["field"] == "pinned" and message in r["message"], r


def test_a_pinned_set_up_names_only_what_differs_from_the_defaults():
    assert parse_pinned("batch:4")["batch"] == 4
    assert parse_pinned(" ; model:qwen3-8b ; ")["model"] == "qwen3-8b"


# ---------------------------------------------------------------------------------------------
# The server dials and the price of a token: a pinned set-up beside the current one
# ---------------------------------------------------------------------------------------------

def _table_rows(html: str) -> dict[str, list[str]]:
    """The comparison table's rows by label: [pinned, now, ratio, better]."""
    table = html.split("</table>")[0]
    out = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)]
        out[cells[0]] = cells[1:]
    return out


def test_the_dials_show_the_pinned_server_beside_the_current_one():
    from descent import dials
    from descent.units import format_number, format_time

    r = widgets.run("server_dials", {"pinned": "tp:2;accelerator:h200"})
    assert r["ok"], r
    rows = _table_rows(r["html"])
    # Expected: descent.dials.server_dials at each set-up (the widget's defaults: Llama 3.1 70B, FP8, 8 H100s).
    two = dials.server_dials("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1, 2, 3.0)
    eight = dials.server_dials("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 1, 8, 3.0)
    assert rows["Time to first token"][:2] == [format_time(two.ttft_s), format_time(eight.ttft_s)]
    assert rows["Per user, tokens/s"][:2] == [format_number(two.tokens_per_s_per_user, 3),
                                             format_number(eight.tokens_per_s_per_user, 3)]
    assert rows["Per user, tokens/s"][2] == format_number(eight.tokens_per_s_per_user / two.tokens_per_s_per_user, 3)
    assert rows["Per user, tokens/s"][3] == "now"  # eight chips split each step's reads four times finer
    assert rows["Per million output tokens, $"][3] == "pinned"  # two chips rented, not eight
    assert rows["Fits"] == ["yes", "yes", "", "same"]
    bad = widgets.run("server_dials", {"pinned": "tp:x"})
    assert not bad["ok"] and bad["field"] == "pinned" and "Accelerators (tensor parallel) must be" in bad["message"]


def test_the_price_widget_shows_the_pinned_prices_beside_the_current_ones():
    from descent import economics
    from descent.units import format_int, format_number

    r = widgets.run("price_it_out", {"pinned": "accelerator:h100-sxm"})
    assert r["ok"], r
    rows = _table_rows(r["html"])
    h100 = economics.cost_by_batch("llama-3.1-70b", "h100-sxm", "fp8", "bf16", 8192, 3.0)
    h200 = economics.cost_by_batch("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 3.0)
    assert rows["At one conversation, $ per million"][:3] == [
        format_number(h100[0].usd_per_million_tokens, 3), format_number(h200[0].usd_per_million_tokens, 3),
        format_number(h200[0].usd_per_million_tokens / h100[0].usd_per_million_tokens, 3)]
    assert rows["Largest batch that fits, conversations"][:2] == [format_int(h100[-1].batch), format_int(h200[-1].batch)]
    assert rows["At the largest batch that fits, $ per million"][3] == "now"  # 141 GiB hold more conversations
    # A pinned model that does not fit at all: its prices say so, and no side is called better on them.
    r = widgets.run("price_it_out", {"pinned": "model:llama-3.1-405b;weights:bf16"})
    rows = _table_rows(r["html"])
    assert rows["At one conversation, $ per million"][0] == "does not fit"
    assert rows["At one conversation, $ per million"][3] == ""
    assert "Pinned set-up" not in widgets.run("price_it_out", {})["html"]


# ---------------------------------------------------------------------------------------------
# descent size|dials|cost --compare
# ---------------------------------------------------------------------------------------------

def _cli(capsys, *argv):
    from descent import cli

    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_size_compare_prints_both_columns_the_ratio_and_the_better_one(capsys):
    rc, out, _ = _cli(capsys, "size", "llama-3.1-70b", "-a", "h200", "--weights", "fp8", "--compare", "-a", "b200")
    assert rc == 0
    h200 = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    b200 = size("llama-3.1-70b", "b200", "fp8", "bf16", 8192, 1)
    line = next(x for x in out.splitlines() if x.startswith("Decode ceiling per sequence"))
    ratio = b200.decode_tokens_per_s / h200.decode_tokens_per_s
    from descent.units import format_number

    assert line.endswith(f"{format_number(ratio, 3)}  second")  # the B200's 8 TB/s beat the H200's 4.8
    assert f"{format_number(h200.decode_tokens_per_s, 4)} tokens/s" in line
    assert f"{format_number(b200.decode_tokens_per_s, 4)} tokens/s" in line
    assert "second  accelerator b200" in out


def test_compare_json_holds_both_objects_as_the_command_prints_them(capsys):
    rc, out, _ = _cli(capsys, "dials", "--tp", "8", "--compare", "--tp", "4", "--json")
    assert rc == 0
    both = json.loads(out)
    _, first, _ = _cli(capsys, "dials", "--tp", "8", "--json")
    _, second, _ = _cli(capsys, "dials", "--tp", "4", "--json")
    assert both["first"] == json.loads(first) and both["second"] == json.loads(second)
    assert both["ratio"]["ttft_s"] == pytest.approx(both["second"]["ttft_s"] / both["first"]["ttft_s"])
    assert both["better"]["ttft_s"] == "first"  # eight chips prefill the prompt sooner than four
    assert both["better"]["usd_per_million_tokens"] == "second"  # four chips rented, not eight


def test_a_model_after_compare_replaces_the_first_and_the_rest_carry_over(capsys):
    rc, out, _ = _cli(capsys, "cost", "-a", "h100-sxm", "--batch", "1", "--compare", "llama-3.1-8b", "--json")
    assert rc == 0
    both = json.loads(out)
    assert (both["first"]["model"], both["second"]["model"]) == ("llama-3.1-70b", "llama-3.1-8b")
    assert both["second"]["accelerator"] == "h100-sxm" and both["second"]["batch"] == 1
    # 70B in FP8 (72.66 GB with its embedding and head at BF16, descent.weights.KEPT_IN_BF16) and one
    # 8,192-token sequence (2.68 GB) fit the H100's 77.3 usable GB; a second sequence does not: batch 1 is its largest.
    assert both["first"]["fits"] and both["second"]["fits"]
    assert both["better"]["usd_per_million_tokens"] == "second"  # 8B reads a ninth of 70B's bytes
    rc, out, _ = _cli(capsys, "cost", "-a", "h100-sxm", "--batch", "2", "--compare", "llama-3.1-8b", "--json")
    both = json.loads(out)
    assert (both["first"]["fits"], both["second"]["fits"]) == (False, True)
    assert both["better"]["fits"] == "second" and both["better"]["usd_per_million_tokens"] == ""  # 70B cannot hold 2


@pytest.mark.parametrize("argv, says", [
    (("size", "--compare"), "--compare needs the flags of the second set-up"),
    (("size", "--compare", "--context", "0"), "Context must be 1 to 20,000,000 tokens, got 0"),
    (("dials", "--compare", "--tpp", "2"), "unknown flag '--tpp'"),
])
def test_compare_refuses_bad_input_in_one_line(capsys, argv, says):
    rc, out, err = _cli(capsys, *argv)
    assert rc == 2 and says in err and len(err.strip().splitlines()) == 1 and not out


def test_a_speed_is_not_better_when_its_set_up_does_not_fit():
    # Llama 3.1 70B in BF16 (141 GB of weights, descent.memory.size) does not fit one H200 (141 GiB,
    # 10% kept for the runtime), in FP8 it does; the BF16 ceiling is the slower one here, but with the
    # H100 in BF16 neither fits and the H200's faster ceiling is no better set-up, only a hypothetical one.
    fp8 = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    bf16 = size("llama-3.1-70b", "h200", "bf16", "bf16", 8192, 1)
    h100 = size("llama-3.1-70b", "h100-sxm", "bf16", "bf16", 8192, 1)
    assert (fp8.fits, bf16.fits, h100.fits) == (True, False, False)
    neither = {c.field: c for c in compare(bf16, h100)}
    assert bf16.decode_tokens_per_s > h100.decode_tokens_per_s  # 4.8 TB/s against 3.35 TB/s
    assert neither["decode_tokens_per_s"].better == "" and neither["decode_tokens_per_s_total"].better == ""
    assert neither["decode_tokens_per_s"].ratio == pytest.approx(h100.decode_tokens_per_s / bf16.decode_tokens_per_s)
    assert neither["free_bytes"].better == "before"  # memory rows still compare: the H200 lacks less
    one = {c.field: c for c in compare(fp8, bf16)}
    assert one["fits"].better == "before" and one["decode_tokens_per_s"].better == ""
    # The command line marks the same rows (descent.cli.compare reads the same lists).
    from descent.cli.compare import compared_rows
    from descent.memory import as_json

    rows = {label: better for label, _, _, _, better in compared_rows("size", as_json(bf16), as_json(h100))}
    assert rows["Decode ceiling per sequence"] == "" and rows["Memory left free"] == "first"


def test_dials_and_cost_mark_no_faster_or_cheaper_server_that_does_not_fit():
    from descent import dials, economics

    big = dials.server_dials("llama-3.1-405b", "h100-sxm", "bf16", tp=2)  # 810 GB of weights on 160 GB
    fits = dials.server_dials("llama-3.1-405b", "h100-sxm", "fp8", tp=8)
    assert (big.fits, fits.fits) == (False, True)
    rows = {c.field: c.better for c in dials.compare(big, fits)}
    assert rows["fits"] == "after"
    assert all(rows[f] == "" for f in dials.NEEDS_FIT)
    assert set(economics.NEEDS_FIT) <= {f for f, _, _ in economics.COMPARED}


# ---------------------------------------------------------------------------------------------
# Memory left over: a set-up that does not fit gets a shortfall, not a negative number or ratio
# ---------------------------------------------------------------------------------------------

def test_memory_left_prints_a_shortfall_and_no_ratio_when_a_side_does_not_fit(capsys):
    """Llama 3.1 70B on one H200 (141 GiB = 151,397,597,184 B, 90% usable = 136,257,837,465.6 B) at
    8,192 tokens: BF16 weights 70,553,706,496 x 2 = 141,107,412,992 B plus 2,684,354,560 B of KV cache
    need 143,791,767,552 B, 7,533,930,086.4 B more than the chip offers; FP8 fits with 60.9 GB free."""
    from descent.compare import spare_text
    from descent.units import format_bytes

    bf16 = size("llama-3.1-70b", "h200", "bf16", "bf16", 8192, 1)
    fp8 = size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 1)
    assert bf16.free_bytes == pytest.approx(-7_533_930_086.4, abs=1)
    (free,) = [c for c in compare(bf16, fp8) if c.field == "free_bytes"]
    assert free.ratio is None and free.better == "after"  # no ratio of a negative; the one that fits is better
    (need,) = [c for c in compare(bf16, fp8) if c.field == "need_bytes"]
    assert need.ratio == pytest.approx(fp8.need_bytes / bf16.need_bytes)  # other rows keep theirs
    both_fit = compare(fp8, size("llama-3.1-70b", "h200", "fp8", "bf16", 8192, 2))
    assert next(c for c in both_fit if c.field == "free_bytes").ratio is not None  # both >= 0: a ratio
    assert spare_text(-7.5e9, lambda x: format_bytes(x, "GB", 3, trim=True)) == "does not fit: needs 7.5 GB more"
    assert spare_text(7.5e9, lambda x: format_bytes(x, "GB", 3, trim=True)) == "7.5 GB"
    # The sandbox's pinned comparison: the cell says it, the ratio cell is empty.
    r = widgets.run("size_it_yourself", {"weights": "bf16", "pinned": "weights:fp8"})
    assert r["ok"], r
    row = _table_rows(r["html"])["Memory left free, GB"]
    assert row[:4] == ["60.9", "does not fit: needs 7.53 GB more", "", "pinned"]
    # descent size --compare: the same words, no ratio, and null in --json.
    rc, out, _ = _cli(capsys, "size", "-w", "bf16", "--compare", "-w", "fp8")
    line = next(x for x in out.splitlines() if x.startswith("Memory left free"))
    assert rc == 0 and "does not fit: needs 7.53 GB more" in line and line.split()[-1] == "second"
    assert "-7.53" not in out and "-0." not in line
    rc, out, _ = _cli(capsys, "size", "-w", "bf16", "--compare", "-w", "fp8", "--json")
    assert json.loads(out)["ratio"]["free_bytes"] is None
    # descent dials: spare memory of a server that does not fit (405B in BF16 on 8 H100s: over 101 GB of
    # weights alone per device against 77.3 GB usable; the shortfall is descent.dials.server_dials's free_bytes).
    from descent import dials

    d = dials.server_dials("llama-3.1-405b", "h100-sxm", "bf16", "bf16", 8192, 1, 8)
    rc, out, _ = _cli(capsys, "dials", "llama-3.1-405b", "-w", "bf16")
    assert f"does not fit: needs {format_bytes(-d.free_bytes)} more per accelerator" in out


def test_a_placeholder_is_for_text_inputs_only():
    from descent import params as P
    from descent.widgets import Input

    with pytest.raises(ValueError, match="a placeholder is for text inputs"):
        Input(P.BATCH, "number", placeholder="x")
