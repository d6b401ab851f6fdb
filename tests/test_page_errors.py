"""Issue 8, section 3: the errors a careful reader found on the written pages, one test per kind.

Each test checks the kind of fault wherever it can appear (the Markdown of every page, the widget
that shows it, the code behind it), not only the line that showed it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from widget_html import stat as _stat
from widget_html import text as _text

from descent import catalog, transformer, widgets
from descent.recorded import prompt_trace, trace_data
from descent.site import shortcodes
from descent.trace import forward


def P(prompt_id: str) -> dict:
    """The widget inputs that type a recorded prompt: its text, and whether it goes in as a chat message."""
    rec = prompt_trace(prompt_id)
    return {"prompt": rec["prompt"], "chat": rec["chat"]}

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _prose(md: str) -> str:
    """A page's text with shortcodes removed and lines joined (for phrase checks)."""
    return re.sub(r"\s+", " ", re.sub(r"<!--.*?-->", " ", md, flags=re.S))


# ---- The trace is SmolLM2-135M-Instruct from a 4-bit Q4_1 GGUF, dequantized ---------------------


def test_part0_names_the_traced_model_and_file_where_the_trace_first_appears():
    md = _page("part-0-the-prompt.md")
    first = md.index("descent:value trace ")  # the first number from the trace
    intro = md[: md.index("\n\n", first)]
    assert "field=model" in intro and "field=file" in intro and "Q4_1" in intro
    assert "(part-2-weights-as-numbers.md)" in intro  # linked forward to Part 2
    resolved = shortcodes.resolve(intro, "part-0-the-prompt.md")
    assert "SmolLM2-135M-Instruct" in resolved and "SmolLM2-135M-Instruct.Q4_1.gguf" in resolved
    assert trace_data()["model"]["file"].endswith(".Q4_1.gguf")


def test_no_page_says_billions_of_numbers_for_a_135_million_parameter_model():
    for p in PAGES:
        assert "billions of numbers" not in _prose(p.read_text(encoding="utf-8")), p.name
    # Part 0's count is the computed one: 134,515,008 parameters print as "135 million"
    assert "<!-- descent:value params_total model=smollm2-135m -->" in _page("part-0-the-prompt.md")
    assert shortcodes.resolve("<!-- descent:value params_total model=smollm2-135m -->", "x.md") == "135 million"


# ---- Generation stops when the end token is chosen -----------------------------------------------

#: Phrases that make "ranked first" the stopping rule (true only of greedy decoding).
WRONG_STOP = ("ranks a special", "until it picks an end-of-reply token", "ranks an end")


def test_stopping_is_the_end_token_being_chosen_not_ranked_first():
    for p in PAGES:
        prose = _prose(p.read_text(encoding="utf-8"))
        for phrase in WRONG_STOP:
            assert phrase not in prose, (p.name, phrase)
    p0, p1 = _prose(_page("part-0-the-prompt.md")), _prose(_page("part-1-the-transformer.md"))
    assert "random pick" in p0 and "ranks first" in p0  # drawn when sampling; first when greedy
    assert "Under sampling the end token is drawn" in p1 and "under greedy decoding" in p1
    # the recorded chat reply ends on the end token, and its last step is the greedy pick
    chat = prompt_trace("chat")["generation"]
    assert chat["stop_reason"] == "stop_token"
    last = chat["steps"][-1]
    assert last["token"]["id"] == last["alternatives"][0]["id"]


# ---- RoPE: which pairs the figure rotates -----------------------------------------------------------


def _rotate_half(x, cos, sin):
    """Hugging Face's Llama RoPE: pairs number n with n + d/2 (transformers ``rotate_half``)."""
    d = x.shape[-1]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    full_cos, full_sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
    return x * full_cos + np.concatenate([-x2, x1], -1) * full_sin


def test_rope_layouts_agree_only_with_the_gguf_row_permutation():
    """The two pairings give the same attention scores when the query/key rows are permuted as
    llama.cpp's convert_hf_to_gguf.py does (``reshape(n_head, 2, d/2, ...).swapaxes(1, 2)``), and
    different ones when they are not: the page's aside says which the formula shows."""
    rng = np.random.default_rng(8)
    d, t = 8, 5
    q, k = rng.normal(size=(t, d)), rng.normal(size=(t, d))  # one head, Hugging Face layout
    ang = np.arange(t)[:, None] * 10000.0 ** (-2 * np.arange(d // 2) / d)  # (T, d/2)
    cos, sin = np.cos(ang), np.sin(ang)
    hf = _rotate_half(q, cos, sin) @ _rotate_half(k, cos, sin).T
    perm = np.arange(d).reshape(2, d // 2).T.reshape(-1)  # GGUF order: 0, d/2, 1, d/2 + 1, ...
    gguf = forward.rope_interleaved(q[None, :, perm], cos, sin)[0] @ forward.rope_interleaved(
        k[None, :, perm], cos, sin)[0].T
    assert np.allclose(hf, gguf)
    unpermuted = forward.rope_interleaved(q[None], cos, sin)[0] @ forward.rope_interleaved(k[None], cos, sin)[0].T
    assert not np.allclose(hf, unpermuted)
    from descent.formulas import FORMULAS

    assert "adjacent pairs" in FORMULAS["rope_pair"].source
    aside = _prose(_page("part-1-the-transformer.md"))
    assert "rotate_half" in aside and "n + d/2" in aside and "neighbour pairs" in aside


# ---- Gated FFNs: not every model's is a SwiGLU; the GPT-2 / BERT stack has LayerNorm -------------


def test_gated_ffn_kinds_are_recorded_and_the_page_names_them():
    gates = {m.id: m.ffn_gate for m in catalog.models().values()}
    assert gates["gemma-3-27b"] == "GeGLU" and gates["gpt-oss-120b"] == "clamped SwiGLU"
    prose = _prose(_page("part-1-the-transformer.md"))
    assert "Most current models use a *gated* FFN, SwiGLU" not in prose
    assert "GeGLU" in prose and "gpt-oss caps" in prose
    for p in PAGES:  # no page claims SwiGLU for every model
        assert not re.search(r"(all|every) (current |modern )?models? use[s]? (a )?SwiGLU", _prose(p.read_text())), p.name


def test_stack_calculator_default_is_layernorm_like_gpt2_and_bert():
    r = widgets.run("stack_calculator", {})
    t = _text(r["html"])
    # GPT-2 small / BERT-base: two LayerNorms per block, gain and bias of 768 each = 4 x 768 = 3,072
    assert "LayerNorm, gain and bias (not in the total)" in t and "RMSNorm" not in t.split("Where the count")[1]
    assert "LayerNorm, gain and bias (not in the total) 2 × 2 × d_model 3,072" in t
    rms = _text(widgets.run("stack_calculator", {"norm": "rmsnorm"})["html"])
    assert "RMSNorm, gain only (not in the total) 2 × d_model 1,536" in rms  # 2 x 768
    assert transformer.stack_params(12, 768, 12, 12, 3072, False, norm="layernorm").norms_per_layer == 3072
    with pytest.raises(ValueError, match="norm must be one of rmsnorm, layernorm"):
        transformer.stack_params(12, 768, 12, 12, 3072, False, norm="batchnorm")


# ---- One convention for active parameters --------------------------------------------------------


def test_one_convention_for_active_parameters():
    """Every page prints active counts from the one quantity (the embedding table counted); a
    publisher's own figure appears only named as the publisher's."""
    for p in PAGES:
        md = p.read_text(encoding="utf-8")
        for m in re.finditer(r"params_active_published", md):
            around = _prose(md[max(0, m.start() - 300): m.end() + 200])
            assert "own figure" in around or "publish" in around, (p.name, around)
    # Part 1's share and Part 5's count are the same numbers: gpt-oss-120b 5,713... of 116,829...
    pc = transformer.param_counts(catalog.model("gpt-oss-120b"))
    share = shortcodes.resolve("<!-- descent:value moe_active_share model=gpt-oss-120b -->", "x.md")
    count = shortcodes.resolve("<!-- descent:value params_active model=gpt-oss-120b -->", "x.md")
    assert share == "4.89%" and count == "5.71 billion"
    assert round(pc.active / pc.total * 100, 2) == 4.89
    p5 = _page("part-5-the-whole-descent.md")
    assert "descent:value params_active model=gpt-oss-120b" in p5
    assert "What this site calls *active* parameters" in _page("part-1-the-transformer.md")


# ---- The cached decode step still reads the whole KV cache -----------------------------------------


def test_autoregression_widget_says_attention_reads_the_whole_cache():
    p = prompt_trace("chat")
    r = widgets.run("autoregression", {**P("chat"), "step": 10})
    html = r["html"]
    # step 10 of the chat reply: the prompt plus 10 generated tokens are in the cache
    assert _stat(html, "This step, with a KV cache") == "1"
    assert _stat(html, "Keys and values its attention reads") == str(len(p["tokens"]) + 10)
    assert "not the reading of their keys and values" in _text(html)
    assert "attention still reads" in widgets.get("autoregression").description


# ---- The step slider follows the chosen reply ----------------------------------------------------


@pytest.mark.parametrize("name", ["generation_loop", "autoregression"])
@pytest.mark.parametrize("prompt", ["capital", "arithmetic", "chat", "story", "uncertain"])
def test_step_slider_ends_at_the_replys_last_step(name, prompt):
    last = len(prompt_trace(prompt)["generation"]["steps"]) - 1
    html = widgets.render_static(name, **P(prompt), step="0")
    assert f'id="dw-{name}-' in html
    assert re.search(r'class="descent-field__range" id="[^"]*-step-range" min="0" max="' + str(last) + '"', html)
    assert re.search(r'class="descent-field__number" id="[^"]*-step" name="step" min="0" max="' + str(last) + '"', html)
    live = widgets.run(name, {**P(prompt), "step": 0})["html"]
    assert f'data-limits="{{&quot;step&quot;: {{&quot;max&quot;: {last}}}}}"' in live


def test_the_story_reply_is_the_23_step_case():
    # the case the reader found: "story" has 24 recorded steps (0 to 23); the slider ran to 63
    assert len(prompt_trace("story")["generation"]["steps"]) == 24
    html = widgets.render_static("generation_loop")
    assert 'max="23"' in html and 'max="63"' not in html
