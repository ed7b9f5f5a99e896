"""The model reaches the database views through the loop: their schemas are in what it is sent, its calls run against
the real scene of conftest.py, it reads the blocking chain back, and each step carries the view's data for the
readers (the playbook, the digest) through tools/results.py."""

from __future__ import annotations

from collections.abc import Callable

from bot.engine.loop import run_agent
from bot.engine.types import Budget, Question
from tests.fakes.llm import ScriptedLLM, scripted_openai_llm, tool_results
from tests.tools.database.conftest import Shop
from tools.base import Toolbox
from tools.database.locks import DbLocks
from tools.database.sessions import DbConnections
from tools.results import database_of


def call(name: str, **args: object) -> dict[str, object]:
    return {"name": name, "arguments": args}


def test_the_model_follows_a_pool_timeout_to_the_root_blocker(
    shop: Shop, shop_tools: Callable[..., Toolbox], scripted_llm: ScriptedLLM
) -> None:
    pool_step = call("query_db_connections", database="order")
    lock_step = call("query_db_locks", database="order")
    scripted_llm.script(
        {"content": "Order's pool times out: its database's connections.", "tool_calls": [pool_step]},
        {"content": "Something holds the rows order updates.", "tool_calls": [lock_step]},
        {"content": "Final Answer: billing-batch's open transaction blocks order's updates."},
    )
    question = Question("order's pool times out (HikariPool: Connection is not available), why?")
    trace = run_agent(question, scripted_openai_llm(scripted_llm), shop_tools(), Budget())

    connections, locks, finish = trace.steps
    assert finish.action == "finish"
    sent = scripted_llm.chat_requests[0].body
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in sent["tools"]}
    assert schemas["query_db_locks"]["properties"]["database"]["enum"] == ["shop-db", "shop-db-replica", "order"]
    pool = database_of(connections)
    assert isinstance(pool, DbConnections) and pool.role_limits[0].role == "order_app"
    chain = database_of(locks)
    root = shop.pids["billing-batch"]
    assert isinstance(chain, DbLocks) and [r.pid for r in chain.roots] == [root]
    read_back = tool_results(scripted_llm.chat_requests[2].messages)
    assert any(f"ROOT BLOCKER pid {root} billing-batch/batch" in text for text in read_back)
