"""One token replayed (descent.replay) and its widget ``one_token_replayed``."""

from __future__ import annotations

import pytest

from descent import gguf_types, replay, weights_sample
from descent import widgets as w
from descent.widgets import part5_replay


def test_file_bytes_are_the_gguf_tensor_list():
    # weights.json file_types: Q4_1 66,355,200 + Q8_0 30,081,024 + F32 140,544 = 96,576,768 bytes.
    assert replay.file_bytes() == 96_576_768


def test_decode_step_by_hand():
    c = replay.decode_step("h100-sxm")
    # KV: 30 layers x 3 KV heads x 64 x 2 (K and V) = 11,520 values/token x 5 tokens x 2 B = 115,200 B.
    assert c.kv_bytes == 115_200
    assert c.bytes == 96_576_768 + 115_200
    # 96,691,968 B / 3.35e12 B/s = 2.88633e-5 s; FLOPs 269,305,344 / 989.4e12 (BF16 dense) = 2.72e-7 s.
    assert c.memory_s == pytest.approx(96_691_968 / 3.35e12, rel=1e-12)
    assert c.flops == 269_305_344
    assert c.bound == "memory" and c.seconds == c.memory_s
    # Prefill of 5 tokens: same bytes (weights once, the 5 tokens' cache written), more FLOPs.
    p = replay.prefill_step("h100-sxm")
    assert p.bytes == c.bytes and p.flops > 4 * c.flops


def test_stages_and_errors():
    assert len(replay.STAGES) == 10
    assert replay.stage(1)[0] == "tokenize" and replay.stage(10)[0] == "append"
    for bad in (0, 11, 1.5, True):
        with pytest.raises(ValueError, match="stage must be a whole number from 1 to 10"):
            replay.stage(bad)
    with pytest.raises(ValueError, match="Layer must be 1 to 30"):
        part5_replay.one_token_replayed(1, 31, "h100-sxm")


def test_widget_shows_the_recorded_numbers():
    # Stage 1: the recorded token ids (traces.json, capital): The 504, capital 3575, of 282, France 4649, is 314.
    chips = part5_replay.one_token_replayed(1, 1, "h100-sxm")[0]
    assert [c["id"] for c in chips["chips"]] == [504, 3575, 282, 4649, 314]
    # Stage 5: " Paris" leads with logit 17.371 and probability 0.77253.
    table = part5_replay.one_token_replayed(5, 1, "h100-sxm")[0]
    assert table["rows"][0] == [" Paris", "17.37", "77.3%"]
    # Stage 7: layer 3's first Q4_1 block of attn_q; weight = d x q + m.
    kv = dict(part5_replay.one_token_replayed(7, 3, "h100-sxm")[0]["items"])
    assert kv["first 8 of 32 codes"].split()[0] == "4"
    # Every stage ends with where it is explained, and every stage renders.
    for s in range(1, 11):
        views = part5_replay.one_token_replayed(s, 2, "h200")
        assert views[-1]["text"].startswith(f"Stage {s} of 10")
    assert "one_token_replayed" in w.names()


def test_the_chip_note_follows_the_bound():
    # Groq's LPU reads 96.7 MB from on-chip SRAM in 1.21 us but needs 1.43 us for 269 MFLOP: compute-bound.
    assert replay.decode_step("groq-lpu").bound == "compute"
    # [-1] says where the stage is explained, [-2] which controls it uses (a control is offered only there).
    note = part5_replay.one_token_replayed(9, 1, "groq-lpu")[-3]["text"]
    assert "reads faster than it multiplies" in note
    assert "waits on memory" in part5_replay.one_token_replayed(9, 1, "h100-sxm")[-3]["text"]


def test_embedding_rows_are_the_runs_tokens_as_stored():
    # embedding_rows.json, written by descent.trace.embedding_rows from the GGUF's token_embd.weight
    # (checked against gguf's own dequantization and the forward pass's table in test_replay_data.py).
    rows = replay.embedding_rows()
    # traces.json, capital: the prompt's tokens The 504, capital 3575, of 282, France 4649, is 314,
    # then the token the run chose, " Paris" 7042.
    assert [(r.text, r.id, r.role) for r in rows] == [
        ("The", 504, "prompt"), (" capital", 3575, "prompt"), (" of", 282, "prompt"),
        (" France", 4649, "prompt"), (" is", 314, "prompt"), (" Paris", 7042, "reply")]
    r = replay.embedding_row(4)
    assert r == rows[3]
    # Q8_0 (ggml-common.h block_q8_0): an FP16 scale and 32 signed 8-bit codes, 34 bytes a block;
    # a row of 576 numbers is 18 blocks = 612 bytes, and 49,152 rows are 30,081,024 bytes, the
    # Q8_0 total of weights.json's tensor list (the table is the file's one Q8_0 tensor).
    assert (r.width, r.vocab, r.type, r.row_bytes, r.table_bytes) == (576, 49152, "Q8_0", 612, 30_081_024)
    block = gguf_types.block_type("Q8_0")
    assert (block.block_size, block.block_bytes) == (32, 34)
    assert r.row_bytes == r.width // block.block_size * block.block_bytes
    assert r.table_bytes == r.vocab * r.row_bytes == weights_sample.data()["file_types"]["Q8_0"]["bytes"]
    # " France": block 0's FP16 scale is 1330 / 2**19 (an FP16 value: 1330 < 2**11), its first
    # codes -51, 14, 10, ...; each number is d x q, exact: -51 x 1330 / 2**19.
    assert r.scale == 1330 / 2**19
    assert r.codes == (-51, 14, 10, 2, -6, -21, -82, -16)
    assert r.values[0] == -51 * 1330 / 2**19 and r.values == tuple(r.scale * q for q in r.codes)
    # Its length, recomputed from the whole table in test_replay_data.py: 2.2826 (5 figures).
    assert r.norm == pytest.approx(2.2826, abs=1e-4)
    for bad in (0, 6, 2.0, True):
        with pytest.raises(ValueError, match="token must be a whole number from 1 to 5"):
            replay.embedding_row(bad)


def test_stage_2_shows_the_chosen_tokens_row():
    # Default token: the last, " is" (id 314): scale 1516 / 2**19, codes -20 4 -23 13 61 23 -4 -29
    # (embedding_rows.json); -20 x 1516 / 2**19 = -0.0578 to 4 places; length 2.6013 -> "2.601".
    views = part5_replay.one_token_replayed(2, 1, "h100-sxm")
    stats = {x["label"]: x for x in views if x["kind"] == "stat"}
    assert stats["Row"]["value"] == "314" and '" is"' in stats["Row"]["note"]
    assert stats["Length"]["value"] == "2.601"
    assert stats["Stored in"]["value"] == "612 B" and stats["Stored in"]["note"] == "18 Q8_0 blocks of 34 bytes"
    kv = dict(next(x for x in views if x["kind"] == "kv")["items"])
    assert kv["first 8 of 576 codes q"] == "-20 4 -23 13 61 23 -4 -29"
    assert kv["their numbers, d x q"].split()[0] == "-0.0578" and -20 * 1516 / 2**19 == pytest.approx(-0.0578, abs=5e-5)
    # The table: one row per prompt token; " France" starts -51 x 1330 / 2**19 = -0.129 and has length 2.283.
    table = next(x for x in views if x["kind"] == "table")
    assert [row[1] for row in table["rows"]] == ["504", "3,575", "282", "4,649", "314"]
    assert table["rows"][3][2].split()[0] == "-0.129" and table["rows"][3][3] == "2.283"
    # Another token through the runtime, as a form sends it (text).
    html = w.run("one_token_replayed", {"stage": "2", "token": "1"})["html"]
    assert "0.1096" in html  # " The": 44 x d(504) = 44 x 0.002490997... = 0.1096
    bad = w.run("one_token_replayed", {"stage": "2", "token": "9"})
    assert not bad["ok"] and bad["field"] == "token"


def test_every_stage_links_to_its_section():
    # The sections named in replay.STAGES, as relative .html addresses (Material's offline plugin
    # turns directory URLs off); anchors are the headings' toc slugs (checked in test_replay_data.py).
    hrefs = [replay.section_href(n) for n in range(1, 11)]
    assert hrefs[0] == "part-1-the-transformer.html#tokenization"
    assert hrefs[1] == "part-1-the-transformer.html#embeddings"
    assert hrefs[3] == "part-1-the-transformer.html#the-feed-forward-network-and-mixture-of-experts"
    assert hrefs[6] == "part-2-weights-as-numbers.html#zoom-into-a-weight"
    assert hrefs[7] == "part-3-serving-software.html#prefill-and-decode"
    assert hrefs[8] == "part-4-hardware.html#the-roofline"
    for n in range(1, 11):
        where = part5_replay.one_token_replayed(n, 1, "h100-sxm")[-1]
        assert where["href"] == hrefs[n - 1] and where["link"].startswith("Part ")
        assert f'<a href="{hrefs[n - 1]}">' in w.views.render(where)


def test_stage_1_chips_open_each_tokens_row():
    chips = part5_replay.one_token_replayed(1, 1, "h100-sxm")[0]["chips"]
    assert [c["set"] for c in chips] == [{"stage": 2, "token": i} for i in range(1, 6)]


def test_stages_4_8_9_10_show_the_runs_numbers():
    # Stage 4: gate, up and down are 576 x 1,536 each = 2,654,208 weights a layer; Q4_1 stores 32 in
    # 20 bytes, so 3 x 884,736 / 32 x 20 = 1,658,880 bytes (weights.json layer_tensors); 2 FLOPs a weight.
    stats = {x["label"]: x["value"] for x in part5_replay.one_token_replayed(4, 7, "h100-sxm") if x["kind"] == "stat"}
    assert stats["Weights per layer"] == "2,654,208" and stats["Stored in"] == "1.66 MB"
    assert stats["FLOPs per token"] == "5.31 MFLOP"
    # Stage 8: the recorded steps (traces.json generation): step 1 fed the 5 prompt tokens and wrote
    # " Paris"; step 2 fed 1 token with 6 seen and wrote "."; each timed by replay's roofline.
    views = part5_replay.one_token_replayed(8, 1, "h100-sxm")
    rows = next(x for x in views if x["kind"] == "table")["rows"]
    assert rows[0][:5] == ["1", "prefill", "5", "5", "\u2423Paris"]
    assert rows[1][:5] == ["2", "decode", "1", "6", "."]
    # Stage 9: the step that wrote " Paris" is the prefill: 96,576,768 B of weights + 5 tokens x
    # 23,040 B of F16 cache = 96,691,968 B; the next decode step has 6 tokens of context.
    views = part5_replay.one_token_replayed(9, 1, "h100-sxm")
    assert views[0]["label"] == "Bytes read" and views[0]["value"] == "96.7 MB"
    assert replay.prefill_step("h100-sxm").bytes == 96_691_968
    table = next(x for x in views if x["kind"] == "table")
    assert [r[-1] for r in table["rows"]] == ["memory", "memory"]
    # The decode step after it attends over 6 tokens: 269,305,344 FLOPs at 5 (above) + 30 layers x
    # 9 heads x 64 x 2 products (scores, values) x 2 FLOPs = 69,120 for the sixth; cache 6 x 23,040 B.
    dec = replay.decode_step("h100-sxm", 6)
    assert (dec.flops, dec.kv_bytes) == (269_374_464, 138_240)
    assert table["rows"][1][1:3] == ["96.7 MB", "269 MFLOP"]
    # Stage 10: " Paris" is looked up next, row 7,042; the run stopped at its 12-token limit
    # (traces.json stop_reason max_new_tokens), not at a stop token.
    views = part5_replay.one_token_replayed(10, 1, "h100-sxm")
    row = next(x for x in views if x["kind"] == "stat" and x["label"] == "Its row")
    assert row["value"] == "7,042"
    assert "cut at 12 steps" in views[-3]["text"] and "writes its stop token:" not in views[-3]["text"]
