"""descent.widgets.warm does once what a widget's first run would do (issue 28: first changes).

The Pyodide snapshot every reader's worker starts from is made after :func:`descent.widgets.warm`
(``descent.site.runtime.make_snapshot``). A widget's first run used to parse the data file it
reads (the recorded weights: 12 ms of CPython; the catalog's measurements, the released
precisions, the speculative run, the embedding rows, the model file), and in a browser that has
only just started its interpreter such work costs many times more. Counted, not timed: Python's
audit events ``open`` (a file read) and ``import`` (a module looked up), in a fresh interpreter
(this one has loaded everything long ago), during every widget's run at its defaults, at each
input's ends and at each of its "Try it" inputs.
"""

from __future__ import annotations

import json
import subprocess
import sys

from descent import tokenizer
from descent import widgets as w

#: Runs in a fresh interpreter: warm() (unless told "cold"), then every widget's cases with an
#: audit hook on; prints {"warmed": [...], "loads": {widget: [[inputs, [[event, what], ...]], ...]}}.
SCRIPT = r"""
import json, sys
import descent.widgets as w
warmed = w.warm() if sys.argv[1] == "warm" else w.names()
seen, on = [], [False]

def hook(event, args):
    if on[0] and event in ("open", "import"):
        seen.append([event, str(args[0])])

sys.addaudithook(hook)
loads = {}
for name in w.names():
    wid = w.get(name)
    cases = [{}]
    if sys.argv[1] == "warm":
        cases += [{i.name: x} for i in wid.inputs for x in i.extremes()] + [d for d in wid.try_inputs if d]
    for inputs in cases:
        seen.clear()
        on[0] = True
        w.run(name, inputs)
        on[0] = False
        if seen:
            loads.setdefault(name, []).append([inputs, seen[:]])
print(json.dumps({"warmed": warmed, "loads": loads}, default=str))
"""


def _first_runs(mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _files(loads: dict) -> dict[str, set[str]]:
    """{widget: the names of the files its first runs opened}"""
    return {name: {what.replace("\\", "/").rsplit("/", 1)[-1] for _, events in runs for event, what in events
                   if event == "open"} for name, runs in loads.items()}


def test_not_warmed_names_widgets_and_says_why():
    assert set(w.NOT_WARMED) <= set(w.names())
    assert all(isinstance(why, str) and "MiB of heap" in why for why in w.NOT_WARMED.values())


def test_after_warm_a_first_run_reads_no_file_but_the_tokenizers():
    got = _first_runs("warm")
    assert got["warmed"] == [n for n in w.names() if n not in w.NOT_WARMED]
    # The one file left: SmolLM2's tokenizer, read once (NOT_WARMED says why), by the first widget
    # that tokenizes (the next-token guess, with a guess typed); no module is imported.
    events = [e for runs in got["loads"].values() for _, evs in runs for e in evs]
    assert [(event, what.replace("\\", "/").rsplit("/", 1)[-1]) for event, what in events] == \
        [("open", tokenizer.DATA_FILE)], got["loads"]
    assert list(got["loads"]) == ["next_token_guess"]


def test_without_warm_first_runs_read_their_data():
    # The same count without warm(): the widgets' first runs at their defaults read these files, so
    # the count above is not empty for want of looking (and these are what warm() loads).
    files = _first_runs("cold")["loads"]
    opened = _files(files)
    assert {"weights.json"} <= opened["block_scaling"]
    assert {"measurements.toml", "expected_shares.json"} <= opened["price_it_out"]
    assert opened["one_token_replayed"] == {"embedding_rows.json"}
    assert opened["model_in_browser"] == {"model_file.json"}
    assert opened["speculative_strip"] == {"speculative.json"}
    assert opened["tokenizer"] == {tokenizer.DATA_FILE}
