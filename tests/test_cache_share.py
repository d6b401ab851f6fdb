"""Two processes sharing one build's cache entries (descent.trace.cache claims, descent.trace.prefetch).

The rules checked: an entry is computed by the process that claims it; the other waits and reads it
(never computes it twice); when the claimant is gone, releases its claim, or takes too long, the
waiting process computes the entry itself, so it meets the error computing gives; and the second
process's results are the bytes one process writes alone.
"""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest

from descent.trace import cache


@pytest.fixture
def shared(tmp_path, monkeypatch):
    """This process as "main" of a build whose "side" process is alive while ``state["alive"]``."""
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path / "cache"))
    claims = tmp_path / "claims"
    claims.mkdir()
    state = {"alive": True, "gave_up": 0}

    def give_up():
        state["gave_up"] += 1

    cache.share_work(claims, "main", lambda: state["alive"], give_up)
    yield state
    cache.stop_sharing()


def _claim_as_side(path):
    """Make the claim the side process would make on ``path`` (same file name, its role inside)."""
    f = cache._claim_file(cache._share, path)
    f.write_text("side", encoding="utf-8")
    return f


def _never():
    raise AssertionError("computed twice")


def test_without_sharing_every_claim_is_granted(tmp_path, monkeypatch):
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    cache.stop_sharing()
    assert cache.claim(tmp_path / "x.json") and cache.claim(tmp_path / "x.json")
    assert cache.wait_for(tmp_path / "x.json") is False  # nothing to wait for, and no file


def test_a_claim_is_held_by_one_role(shared, tmp_path):
    p = cache.cache_dir() / "kind" / "a.json"
    assert cache.claim(p) and cache.claim(p)  # made, then found to be this process's own
    q = cache.cache_dir() / "kind" / "b.json"
    _claim_as_side(q)
    assert not cache.claim(q)
    cache.release(q)  # not this process's claim: left alone
    assert not cache.claim(q)
    cache.release(p)
    assert not cache._claim_file(cache._share, p).exists()


def test_an_entry_the_other_process_claimed_is_waited_for_not_computed(shared):
    p = cache.cache_dir() / "kind" / "e.json"
    _claim_as_side(p)

    def side_writes():
        time.sleep(0.3)
        cache.atomic_write_text(p, json.dumps({"by": "side"}))

    t = threading.Thread(target=side_writes)
    t.start()
    start = time.monotonic()
    assert cache.cached_json("kind", "e.json", _never) == {"by": "side"}
    t.join()
    assert time.monotonic() - start >= 0.25  # it did wait


@pytest.mark.parametrize("how", ["the other process ended", "the claim was released", "the wait timed out"])
def test_the_waiting_process_computes_it_when_the_other_will_not(shared, monkeypatch, how):
    p = cache.cache_dir() / "kind" / "f.json"
    claim = _claim_as_side(p)
    if how == "the other process ended":
        shared["alive"] = False
    elif how == "the claim was released":
        threading.Timer(0.1, claim.unlink).start()
    else:
        monkeypatch.setattr(cache, "SHARE_WAIT_S", 0.2)
    # The error is the one computing gives here: what the build says without a second process.
    with pytest.raises(ValueError, match="the real error"):
        cache.cached_json("kind", "f.json", lambda: (_ for _ in ()).throw(ValueError("the real error")))
    assert cache.cached_json("kind", "f.json", lambda: {"by": "main"}) == {"by": "main"}
    if how == "the wait timed out":
        assert shared["gave_up"] == 1 and cache._share is None  # the build computes alone from then on
    else:
        assert shared["gave_up"] == 0


def test_a_failed_computation_releases_its_claim(shared):
    p = cache.cache_dir() / "kind" / "g.json"
    with pytest.raises(RuntimeError):
        cache.cached_json("kind", "g.json", lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    assert not cache._claim_file(cache._share, p).exists()  # the other process need not wait for it


# -------------------------------------------------------------------- the build's second process


def test_prefetch_starts_nothing_when_all_is_cached(monkeypatch):
    from descent.trace import prefetch

    monkeypatch.setattr(prefetch, "needed", lambda: False)
    assert prefetch.start() is False and not prefetch.running() and prefetch.stop() == ""


def test_prefetch_starts_nothing_without_a_model(tmp_path, monkeypatch):
    from descent.trace import prefetch

    monkeypatch.setenv("DESCENT_GGUF", str(tmp_path / "missing.gguf"))
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path / "cache"))
    assert prefetch.start() is False  # the page that needs the model says what is missing


def test_a_failed_second_process_is_said_after_the_build(tmp_path, monkeypatch):
    # The build then computed everything itself: it says so in one line (INFO, from the hook).
    import sys

    from descent.trace import prefetch

    monkeypatch.setattr(prefetch, "needed", lambda: True)
    monkeypatch.setattr(prefetch, "_command", lambda folder: [
        sys.executable, "-c", "import sys; print('ImportError: no module named numpy'); sys.exit(1)"])
    assert prefetch.start() is True
    deadline = time.monotonic() + 30
    while prefetch.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    note = prefetch.stop(wait=prefetch.FINISH_S)
    assert note == ("the build's second process (descent.trace.prefetch) ended with exit code 1: "
                    "ImportError: no module named numpy; the build computed its share itself")
    assert not cache.sharing()


def test_a_bad_gguf_gives_the_same_error_with_a_second_process(tmp_path, monkeypatch):
    # The second process fails on the file; the build computes the model itself and so raises the
    # error it raises alone, naming the file; nothing waits on the failed process.
    from descent.trace import gguf_reader, prefetch

    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"hello, I am not a model\n")
    monkeypatch.setenv("DESCENT_GGUF", str(bad))
    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path / "cache"))
    gguf_reader.load_model.cache_clear()
    with pytest.raises(gguf_reader.GGUFError) as alone:
        gguf_reader.load_model()
    assert prefetch.start() is True
    try:
        start = time.monotonic()
        with pytest.raises(gguf_reader.GGUFError) as shared:
            gguf_reader.load_model()
        assert str(shared.value) == str(alone.value) and f"{bad}: not a GGUF file" in str(alone.value)
        assert time.monotonic() - start < 60
    finally:
        note = prefetch.stop()
    assert note == "" or "exit code 1" in note  # it may not have reached the file before it was stopped
    gguf_reader.load_model.cache_clear()


def test_a_build_that_did_not_need_the_work_does_not_wait_for_it(tmp_path, monkeypatch):
    # A build of a few pages ends while the second process still computes perplexities nobody
    # asked for: it is terminated at once, not waited for (only its last job, the copy, is).
    from descent.trace import gguf_reader, prefetch

    monkeypatch.setenv("DESCENT_CACHE", str(tmp_path))
    gguf_reader.load_model.cache_clear()
    assert prefetch.start() is True
    time.sleep(1.0)
    start = time.monotonic()
    assert prefetch.stop(wait=prefetch.FINISH_S) == "" and not prefetch.running()
    assert time.monotonic() - start < prefetch.STOP_GRACE_S + 1
    assert not (tmp_path / "gguf").exists() or all(p.name.endswith(f"-v{gguf_reader.CACHE_LAYOUT}")
                                                   for p in (tmp_path / "gguf").iterdir())


@pytest.mark.slow  # the perplexities with two processes, then two of them again alone (about 30 s here)
def test_two_processes_write_the_bytes_one_writes(tmp_path, monkeypatch):
    from descent.trace import gguf_reader, measure, prefetch, quality

    shared_cache, alone_cache = tmp_path / "shared", tmp_path / "alone"
    monkeypatch.setenv("DESCENT_CACHE", str(shared_cache))
    gguf_reader.load_model.cache_clear()
    assert prefetch.start() is True
    try:
        # Let the second process take the model and a variant first, as it does in a build.
        deadline = time.monotonic() + 300
        while not list((shared_cache / "quality").glob("*-int2_block.json")):
            assert prefetch.running() and time.monotonic() < deadline
            time.sleep(0.1)
        q = quality.measure()
        m = measure.measurements()
        # The build may see Part 3's results before the second process, which wrote them, has begun
        # its last job: stop() would end it there, rightly, without the copy (CI at load 9.5 did).
        # This test is about the copy, so it lets the process reach that job first.
        deadline = time.monotonic() + 300
        while prefetch.running() and not (prefetch._side.folder / prefetch.SAVING).exists():
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        note = prefetch.stop(wait=prefetch.FINISH_S)
    assert note == ""
    # The build read the GGUF itself and left the float32 copy to the second process, which wrote
    # it last, whole (no temporary folder left beside it).
    (folder,) = (shared_cache / "gguf").iterdir()
    assert (folder / "index.json").is_file() and len(list(folder.glob("*.npy"))) == 272
    monkeypatch.setenv("DESCENT_CACHE", str(alone_cache))
    gguf_reader.load_model.cache_clear()
    # Alone, one process computes again the first variant (the build's first, from the front) and
    # the last (the second process's first, waited for above); the five between are copied, so the
    # whole entry is put together from them as in the build (all seven took 60-110 s more in CI).
    key = quality._key(gguf_reader.load_model().sha256)
    again = (quality.VARIANTS[0], quality.VARIANTS[-1])
    assert again[-1].id == "int2_block"
    (alone_cache / "quality").mkdir(parents=True)
    for v in quality.VARIANTS:
        if v not in again:
            name = quality._variant_path(key, v).name
            shutil.copyfile(shared_cache / "quality" / name, alone_cache / "quality" / name)
    assert quality.measure() == q and measure.measurements() == m
    for folder in ("quality", "measurements"):
        for f in sorted((alone_cache / folder).iterdir()):
            assert f.read_bytes() == (shared_cache / folder / f.name).read_bytes(), f.name
    gguf_reader.load_model.cache_clear()
