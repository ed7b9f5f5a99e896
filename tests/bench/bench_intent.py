"""Cost and accuracy of the intent gate's learned classifier (no LLM).

Run on demand:  .venv/bin/python -m pytest tests/bench/bench_intent.py -s
Prints: artifact size, load time, memory (Python allocations kept by the loaded model, and the process RSS growth
in a fresh interpreter), per-message latency of the whole no-model gate, the share of messages the classifier is
unsure about, the scorecard of every held-out split (heldout, unseen, blind) and how often the request kind is right
where a held-out line has one. It asserts only that the work was done, never a timing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import tracemalloc

from bot.routing.features import cue_names
from bot.routing.intent import classify
from bot.routing.model import SHIPPED as ARTIFACT
from bot.routing.model import load_model
from bot.routing.scorecard import load_corpus, score, scorecard_to_text

ROUNDS = 5
RSS_PROBE = """
import time
from bot.routing import model
def rss_kb():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])
before = rss_kb()
started = time.perf_counter()
m = model.load_model()
m.scores("why is order slow since 15:05")
print(rss_kb() - before, time.perf_counter() - started)
"""


def test_bench_classifier_cost_and_held_out_accuracy() -> None:
    started = time.perf_counter()
    model = load_model(ARTIFACT)
    load_s = time.perf_counter() - started
    tracemalloc.start()  # a second load, traced (tracing slows it down, so it is not the one timed)
    traced = load_model(ARTIFACT)
    kept_bytes, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert traced.feature_count == model.feature_count
    probes = [
        subprocess.run([sys.executable, "-c", RSS_PROBE], capture_output=True, text=True, check=True).stdout.split()
        for _ in range(3)
    ]
    rss_kb, fresh_load_s = min(probes, key=lambda p: float(p[1]))
    print(
        f"\nartifact {ARTIFACT.stat().st_size / 1024:.0f} KiB, {model.feature_count:,} feature buckets, "
        f"{len(model.routes)} routes"
    )
    print(
        f"load: {load_s * 1000:.0f} ms here, {float(fresh_load_s) * 1000:.0f} ms in a fresh interpreter "
        "(best of 3; module imports not included)"
    )
    print(f"memory: {kept_bytes / 1e6:.1f} MB of Python objects kept; RSS +{int(rss_kb) / 1024:.1f} MB to load")

    corpus = load_corpus()
    heldout = [e for e in corpus if e.split != "train"]  # every split the model never learned from
    timings_us, best_us = [], []
    for example in heldout:
        runs = []
        for _ in range(ROUNDS):
            cue_names.cache_clear()  # each call pays for a message it has not read yet (the gate caches its cues)
            t0 = time.perf_counter()
            classify(example.text, model=model)
            runs.append((time.perf_counter() - t0) * 1e6)
        timings_us += runs
        best_us.append(min(runs))  # a shared machine preempts us; the best of 5 is the message's own cost
    for name, values in (("every call", sorted(timings_us)), ("best of 5 per message", sorted(best_us))):
        p99 = values[int(len(values) * 0.99)]
        print(
            f"latency, rules + classifier, {name} ({len(values)}): p50 {statistics.median(values):.0f} us, "
            f"p99 {p99:.0f} us, max {values[-1]:.0f} us"
        )

    intents = [classify(e.text, model=model) for e in heldout]
    unsure = sum(i.unsure for i in intents)
    print(
        f"unsure (p < 0.6: the cheap model is asked, or the user without one): {unsure}/{len(intents)} "
        f"({unsure / len(intents):.1%})"
    )
    for split in sorted({e.split for e in heldout}):
        card = score(lambda text: classify(text, model=model).route, [e for e in heldout if e.split == split])
        print(f"split {split!r} scorecard, no LLM:")
        print(scorecard_to_text(card))
    requests = [(e, classify(e.text, model=model)) for e in heldout if e.request]
    right = sum(e.request == i.request for e, i in requests)
    print(f"request kind right (where the held-out line has one): {right}/{len(requests)}")
    assert intents and len(timings_us) == ROUNDS * len(heldout)
