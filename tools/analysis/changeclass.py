"""What a changed setting touches, and so which symptoms it can explain and how long its effect can wait.

A change is judged by what it touches, not by whether its name looks harmless: a logging change can fill a disk, a
lowered cap bites only when the daily load meets it, and an image bump is code of unknown content. Each class below
lists the symptoms it can explain; `DELAYED` classes may act hours after they land (a cap, a pool, a rate limit, a
log volume wait for load or time; a retry setting waits for the blip it amplifies), the others act within minutes.
JVM and Go runtime options packed into one string (`JAVA_OPTS=-Xmx4g -XX:+UseG1GC`) are split into one change per
flag, so a GC flag inside the string is judged, and named, on its own.
Pure functions over plain data: the ranking (tools/analysis/ranking.py) and the playbook read them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from tools.analysis.configdiff import ABSENT, KeyChange

CAPACITY = "resources or caps"
POOL = "pools or concurrency"
TIMEOUT = "timeouts or retries"
RUNTIME = "GC or runtime flags"
LOGGING = "logging volume, level or diagnostics"
RATE_LIMIT = "rate limits"
FLAG = "feature flags or rollout"
IMAGE = "image version"
CONTRACT = "data schema or message format"
COSMETIC = "wording or documentation"
SETTING = "another setting"

# Symptoms, as the playbook and find_changes name them.
LATENCY, ERRORS, TRAFFIC, SATURATION = "latency", "errors", "traffic", "saturation"
MEMORY, RESTARTS, DISK, GC, THROTTLING, BACKLOG = "memory", "restarts", "disk", "gc", "throttling", "backlog"
CONNECTIONS = "connections"  # a pool or a server out of connection slots
DECODE = "decode"  # a reader that cannot read what it is sent: an unknown schema version, a field it cannot map
ALL_SYMPTOMS = frozenset(
    {LATENCY, ERRORS, TRAFFIC, SATURATION, MEMORY, RESTARTS, DISK, GC, THROTTLING, BACKLOG, CONNECTIONS, DECODE}
)
# The symptoms a log line can report on its own; a change whose class explains one is tied to that line.
SPECIFIC = frozenset({DISK, GC, THROTTLING, BACKLOG, CONNECTIONS, DECODE})

# Any setting that reaches the code can fail requests, slow them or crash the process at start; what sets a class
# apart is the specific symptom it can also explain.
_GENERAL = frozenset({LATENCY, ERRORS, SATURATION, RESTARTS})
EXPLAINS: dict[str, frozenset[str]] = {
    CAPACITY: _GENERAL | {MEMORY, DISK, BACKLOG, CONNECTIONS},
    POOL: _GENERAL | {MEMORY, BACKLOG, CONNECTIONS},
    TIMEOUT: _GENERAL | {TRAFFIC, CONNECTIONS},
    RUNTIME: _GENERAL | {MEMORY, GC},
    LOGGING: frozenset({DISK, SATURATION}),  # a log volume fills a disk or burns CPU; it does not fail requests
    RATE_LIMIT: _GENERAL | {THROTTLING, BACKLOG},
    FLAG: _GENERAL | {TRAFFIC, MEMORY},
    CONTRACT: _GENERAL | {DECODE, BACKLOG},  # what a producer sends: its readers fail, skip or fall behind
    IMAGE: ALL_SYMPTOMS,  # code of unknown content can do anything, so it is weaker evidence for any one thing
    COSMETIC: frozenset(),
    SETTING: _GENERAL | {TRAFFIC, MEMORY},
}
DELAYED = frozenset({CAPACITY, POOL, RATE_LIMIT, LOGGING, TIMEOUT})
# What each class's change does, for the reason a ranking gives.
_DELAY_WORDS = {
    CAPACITY: "a cap bites only when load meets it",
    POOL: "a pool or concurrency limit bites only when load meets it",
    RATE_LIMIT: "a rate limit bites only when traffic rises past it",
    LOGGING: "log volume fills a disk over hours",
    TIMEOUT: "a retry or timeout setting waits for the failure it amplifies",
}

# Words of a setting's name, by what the setting touches; the first class with a word in the name wins, in this order.
_WORDS: tuple[tuple[str, str], ...] = (
    (COSMETIC, "readme changelog wording copy banner footer title description dashboard label"),
    (CONTRACT, "schema schemas avsc proto protobuf avro envelope contract serializer deserializer"),
    (RUNTIME, "gc gogc gomaxprocs jvm xx xmx xms xss heap maxrampercentage javaopts g1"),
    # diagnostics that only report what happens: a leak detector, trace sampling (metric tags are not: each new
    # tag value is a new series held in memory)
    (LOGGING, "log logs logging logger level appender verbosity loglevel detection tracing sampling"),
    (RATE_LIMIT, "ratelimit ratelimits throttle throttling quota quotas burst tier tiers descriptor"),
    (TIMEOUT, "timeout timeouts retry retries backoff attempts deadline"),
    # a client's connection cap by its driver's name too (database/sql's max_open_conns, pgx's max_conns)
    (POOL, "pool concurrency workers threads prefetch parallelism connections maxconnections conns maxconns openconns"),
    (CAPACITY, "replicas maxreplicas minreplicas resources limits requests cpu memory instance size"),
    (IMAGE, "image newtag tag digest"),
    (FLAG, "flag flags feature features enabled toggle canary rollout weight percentage"),
)
_OPTION_RX = re.compile(r"(?<!\S)-(?:XX:[+-]?(?P<xx>[A-Za-z]\w*)(?:=(?P<xxv>\S+))?|X(?P<x>m[sx]|ss)(?P<xv>\S+))")


def name_words(text: str) -> set[str]:
    """The words of a setting's name: camelCase, dots, dashes and underscores split; also the run-together forms."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", spaced.casefold()) if p]
    joined = {a + b for a, b in itertools.pairwise(parts)}
    return set(parts) | joined


def class_of(change: KeyChange) -> str:
    """What one changed setting touches (one of the classes above)."""
    words = name_words(f"{change.key} {change.path.rsplit('/', 1)[-1].rsplit('.', 1)[0]}")
    if _OPTION_RX.search(f" {change.new} {change.old}"):
        return RUNTIME
    key_words = name_words(change.key)
    for cls, vocabulary in _WORDS:  # the key's own name first: `logging.pool-size` in app.yaml is a pool
        if key_words & set(vocabulary.split()):
            return cls
    return next((cls for cls, vocabulary in _WORDS if words & set(vocabulary.split())), SETTING)


def options_of(text: str) -> dict[str, str]:
    """JVM options in a string: `-XX:ParallelGCThreads=1` -> {"ParallelGCThreads": "1"}, `-Xmx4g` -> {"Xmx": "4g"},
    `-XX:+UseG1GC` -> {"UseG1GC": "on"}."""
    found = {}
    for m in _OPTION_RX.finditer(text if text != ABSENT else ""):
        if m.group("xx"):
            sign = m.group(0)[4:5]
            found[m.group("xx")] = m.group("xxv") or ("off" if sign == "-" else "on")
        else:
            found["X" + m.group("x")] = m.group("xv")
    return found


def expanded(changes: Sequence[KeyChange]) -> list[KeyChange]:
    """The changes with every options string split into one change per flag that differs (key = the flag)."""
    out: list[KeyChange] = []
    for change in changes:
        old, new = options_of(change.old), options_of(change.new)
        if not old and not new:
            out.append(change)
            continue
        for flag in sorted(set(old) | set(new), key=lambda f: (f not in new, f)):
            if old.get(flag) != new.get(flag):  # named with its variable: "JAVA_OPTS MaxRAMPercentage"
                out.append(KeyChange(f"{change.key} {flag}", old.get(flag, ABSENT), new.get(flag, ABSENT), change.path))
    return out


def option_changes_from_diff(diff: str, path_hint: str = "") -> list[KeyChange]:
    """Runtime flags a diff adds or removes on its own lines (a jvm.options file, a container's args)."""
    removed = options_of(" ".join(line[1:] for line in diff.splitlines() if line.startswith("-") and line[:3] != "---"))
    added = options_of(" ".join(line[1:] for line in diff.splitlines() if line.startswith("+") and line[:3] != "+++"))
    return [
        KeyChange(flag, removed.get(flag, ABSENT), added.get(flag, ABSENT), path_hint)
        for flag in sorted(set(removed) | set(added))
        if removed.get(flag) != added.get(flag)
    ]


def with_option_lines(changes: Sequence[KeyChange], diff: str) -> list[KeyChange]:
    """A diff's key changes plus the runtime flags it changes on lines of their own (which no key parser reads)."""
    keys = {c.key for c in expanded(changes)}
    path = next((line[6:] for line in diff.splitlines() if line.startswith("+++ b/")), "")
    return [*changes, *(c for c in option_changes_from_diff(diff, path) if c.key not in keys)]


# Files that define what a service sends or reads (an Avro or Protobuf schema, a JSON schema): a change to one is a
# change of contract even when no key parser reads it.
_CONTRACT_FILE = re.compile(r"\.(?:avsc|avdl|proto|xsd|graphqls?)$|schema[^/]*\.json$", re.I)


def with_contract_files(changes: Sequence[KeyChange], diff: str) -> list[KeyChange]:
    """The changes plus one for each schema or contract file the diff touches that no parsed key comes from."""
    paths = {c.path for c in changes}
    touched = [line[6:] for line in diff.splitlines() if line.startswith("+++ b/")]
    found = [p for p in dict.fromkeys(touched) if _CONTRACT_FILE.search(p) and p not in paths]
    return [*changes, *(KeyChange(p.rsplit("/", 1)[-1], "the previous schema", "a new schema", p) for p in found)]


_LOG_SYMPTOMS = (
    (THROTTLING, re.compile(r"\b429\b|too many requests|rate.?limit|throttl|quota", re.I)),
    (GC, re.compile(r"\bgc\b|garbage collect|gc pause|pause young|allocation failure", re.I)),
    (DISK, re.compile(r"no space left|disk (?:full|usage)|filesystem .*full", re.I)),
    (
        DECODE,
        re.compile(
            r"deseriali[sz]|unsupported (?:schema|version|event)|schema.?version|unknown (?:field|schema)|"
            r"serializationexception|(?:cannot|failed to|unable to) (?:decode|deserialize|parse|unmarshal)",
            re.I,
        ),
    ),
    (MEMORY, re.compile(r"outofmemory|out of memory|heap space|oomkill|memory limit exceeded", re.I)),
    (BACKLOG, re.compile(r"\blag\b|backlog|queue (?:depth|length|full|is growing)|behind by", re.I)),
    (
        CONNECTIONS,
        re.compile(
            r"connection slots|too many (?:clients|connections)|connection is not available|pool .*exhaust|"
            r"pool (?:is )?(?:saturated|full)|(?:waited|waiting|timed out) .*for an? (?:db |database )?connection|"
            r"acquir\w* (?:an? )?(?:db |database )?conn(?:ection)?\b",
            re.I,
        ),
    ),
)


def symptoms_in_text(text: str) -> set[str]:
    """The saturation symptoms a log line reports (throttling, GC pauses, a full disk, a heap run out, a backlog)."""
    return {symptom for symptom, rx in _LOG_SYMPTOMS if rx.search(text)}


def can_explain(cls: str, symptoms: Iterable[str]) -> bool:
    """Whether a change of this class can explain any of the symptoms (every class but wording explains some)."""
    wanted = set(symptoms)
    return bool(EXPLAINS[cls] & wanted) if wanted else cls != COSMETIC


def last_part(key: str) -> str:
    """The setting's own name: `spring.pool.maximumPoolSize` -> maximumPoolSize, `JAVA_OPTS Xmx` -> Xmx."""
    return re.split(r"[.\s]", key.strip())[-1]


def delay_words(cls: str) -> str:
    """Why a change of this class can act hours after it landed ("" for a class that acts within minutes)."""
    return _DELAY_WORDS.get(cls, "")


_GENERIC_WORDS = {"seconds", "total", "count", "bytes", "size", "maximum", "minimum", "http", "server", "value"}


def _words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return {w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if len(w) >= 3 and w not in _GENERIC_WORDS}


def shares_a_word(metric: str, key: str) -> bool:
    """Whether a metric name and a config key name the same thing: a word in common, or one word the start of the
    other ("hikari" and "hikaricp") when the shorter has five letters or more."""
    return any(
        a == b or (min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a)))
        for a in _words(metric)
        for b in _words(key)
    )
