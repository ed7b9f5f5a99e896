"""The Router's canned texts: replies that need no model (help, the read-only refusal, a greeting, a writing request's
templates) and the notes that say which fallback answered."""

from __future__ import annotations

HELP_ANSWER = (
    "I'm opsbot. I investigate production incidents with read-only queries over metrics (Prometheus), logs and "
    "deploy records, and I show every step I take.\n"
    '- Ask why something broke: "why is order p99 high since 15:05?" / "order 服务 P99 飙升，帮我排查一下"\n'
    '- Ask for one number: "what is the p99 of order now?" / "当前 order 的 QPS 是多少"\n'
    '- Follow up in the same thread: "and what about payment?"\n'
    "When a budget stops me early I say so and label the answer partial."
)
READ_ONLY_ANSWER = (
    "I'm read-only: I can't roll back, restart, scale, page anyone or open tickets, so I did nothing. "
    "I can investigate first and show you the evidence for that decision: ask me, e.g. "
    '"why is payment failing since the deploy?"\n'
    "我只有只读权限：不能回滚、重启、扩容、呼人或建工单。可以先问我「payment 为什么发布后报错」，我来排查并给出证据。"
)
# A writing request (a post-mortem, a status-page update, a summary) is never an investigation; without a model
# nothing can write it, so the reply gives the skeletons a person fills in
WRITE_ANSWER = (
    "Writing needs a language model, and none is configured, so I did not investigate anything. Skeletons to fill in:\n"
    "*Post-mortem*: Summary (what broke, for whom, how long) / Impact (users, requests, money) / Timeline (detection, "
    "escalation, mitigation, resolution, in UTC) / Root cause / What went well, what did not / Action items (owner, "
    "due date).\n"
    "*Status-page update*: Status (investigating, identified, monitoring, resolved) / What users see / Since when / "
    "What we are doing / Next update at.\n"
    "*Thread summary*: Current state / Cause (known or not) / Decisions / Open questions / Owners."
)
GREETING_ANSWER = "Hi! I'm opsbot. Ask me why a service misbehaves, or say `help`."
NO_MODEL_NOTE = "No LLM is configured, so this is the deterministic playbook's diagnosis (no model involved)."
MODEL_DOWN_NOTE = "The LLM was unavailable, so this is the deterministic playbook's diagnosis (no model involved)."
LOOKUP_MODEL_DOWN_NOTE = "The LLM was unavailable, so the quick lookup answered without it."
LOOKUP_EMPTY_NOTE = "The quick lookup got no usable answer from the model, so the full diagnosis ran instead."
