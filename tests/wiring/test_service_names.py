"""Services as people say them: aliases, and the one service a word starts or ends (tools/servicenames.py), as the
responder reads them and as doctor checks them."""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from bot.engine.context import question_text
from bot.engine.types import Question
from bot.wiring.meaning import check_aliases
from bot.wiring.roles import with_services_known
from tools.metrics.series import ServiceList
from tools.servicenames import alias_problems, services_said

SERVICES = ["checkout-api", "checkout-worker", "search", "ledger-service", "invoices-db", "cart"]


def test_an_alias_names_its_service():
    text, [reading] = services_said("why is basket slow?", SERVICES, {"cart": ["basket"]})
    assert text == "why is cart slow?"
    assert reading.describe() == "'basket' read as cart (an alias of it in aliases.cart)"


def test_the_one_service_a_word_starts_with_only_its_kind_after_is_read_as_it_and_named():
    text, [reading] = services_said("ledger errors since 10:05", SERVICES, {})
    assert text == "ledger-service errors since 10:05"
    assert reading.describe() == "'ledger' read as ledger-service (the one service whose name starts with it)"


def test_a_word_whose_match_names_another_thing_is_not_read_as_it():
    assert services_said("invoices are going out late", SERVICES, {}) == ("invoices are going out late", [])


def test_a_question_that_names_a_service_as_it_is_gets_no_guess_only_its_aliases():
    said = "search calls ledger and basket"
    assert services_said(said, SERVICES, {"cart": ["basket"]})[0] == "search calls ledger and cart"


def test_a_word_two_services_start_is_not_guessed():
    assert services_said("is checkout slow?", SERVICES, {}) == ("is checkout slow?", [])


def test_a_service_named_as_it_is_and_short_words_are_left_alone():
    assert services_said("is search slow? db? api", SERVICES, {}) == ("is search slow? db? api", [])


def test_an_alias_two_services_claim_or_that_is_another_service_is_a_problem():
    problems = alias_problems({"cart": ["basket", "search"], "checkout-api": ["basket"]}, SERVICES)
    assert "the alias 'basket' is listed for cart, checkout-api: give it to one" in problems
    assert "the alias 'search' of cart is the name of the service search" in problems


def test_doctor_fails_an_alias_used_by_two_services_naming_the_setting(tmp_path: Path):
    config = tmp_path / "opsbot.toml"
    config.write_text(
        'topology = { cart = ["search"], search = [] }\n'
        '[aliases]\ncart = ["basket"]\nsearch = ["basket"]\n'
        "[prometheus]\nurl = 'http://127.0.0.1:9'\n"
    )
    results = check_aliases(Settings(_env_file=None, config_file=config))  # type: ignore[call-arg]
    [failed] = [r for r in results if r.level == "fail"]
    assert str(failed).startswith("FAIL aliases: aliases = ") and f"(config file {config}" in str(failed)
    assert "the alias 'basket' is listed for cart, search: give it to one" in str(failed)


def test_a_services_plural_is_that_service_not_a_longer_one():
    assert services_said("payments failing", ["payment", "payments-db"], {}) == ("payments failing", [])


def test_without_guessing_only_aliases_are_read_so_a_plain_word_stays_a_word():
    services = ["label-service", "shipment-orchestrator"]
    question = "why are Venlo shipments stuck awaiting label?"
    assert services_said(question, services, {}, guess=False) == (question, [])
    assert (
        services_said(question, services, {}, guess=True)[0] == "why are Venlo shipments stuck awaiting label-service?"
    )
    aliased, [reading] = services_said("labels broken?", services, {"label-service": ["labels"]}, guess=False)
    assert aliased == "label-service broken?" and reading.how == "alias"


def test_guessing_is_off_unless_the_team_turns_it_on():
    assert Settings(_env_file=None).guess_service_names is False  # type: ignore[call-arg]


def test_a_question_naming_no_service_carries_the_known_ones_to_the_first_step():
    listed = ServiceList("service", ("label-service", "orders"), 2, {"orders": ("label-service", "orders-db")})
    question = with_services_known(Question("why are Venlo shipments stuck?"), ["orders", "label-service"], listed)
    assert question.known == (
        "services (the question names none of them): orders -> label-service, orders-db; label-service",
    )
    shown = question_text(question)
    assert shown.startswith("Question: why are Venlo shipments stuck?\n\nKnown before the first step:\n- services")


def test_a_service_list_too_long_for_every_request_is_left_to_list_services():
    many = [f"service-{n:03d}" for n in range(200)]
    question = Question("why is it slow?")
    assert with_services_known(question, many, None) == question
    assert with_services_known(question, [], None) == question
    assert question_text(question) == "Question: why is it slow?"
