"""One token replayed (descent.replay) and its widget ``one_token_replayed``."""

from __future__ import annotations

import pytest

from descent import replay
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
