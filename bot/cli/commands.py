"""The command table: each command's module is imported when that command runs, not to print `opsbot --help`.

`opsbot --help` lists the table's summaries (tests/cli/test_command_table.py keeps them equal to the commands' own
help), so it imports no command module; `opsbot parse` imports bot.cli.inspection alone. A command is built the
way typer builds it (its options, its help), inside a throwaway app that carries the root's help settings.

Typer (0.2x) checks every option value through a pydantic TypeAdapter, which imports pydantic (~0.1 s) even for
`opsbot parse`; str, bool and list[str] values are already what click read, so they are passed through as typer's
adapter would return them (as is; repeated values as a list) and pydantic loads only for the other types.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer import _click
from typer._click.utils import make_default_short_help
from typer._coercion import RuntimeParam, build_runtime_param
from typer.core import TyperCommand, TyperGroup, _TyperParameter

CONTEXT_SETTINGS: dict[str, Any] = {"max_content_width": 120}
HELP_ONLY = "opsbot.help_only"  # ctx.meta key: the command line only asks for a command's help


@dataclass(frozen=True)
class Entry:
    """A command: `module:attribute` (a function, or a typer app for a group) and its one-paragraph summary."""

    target: str
    summary: str


# In the order `opsbot --help` lists them.
TABLE: dict[str, Entry] = {
    "parse": Entry(
        "bot.cli.inspection:parse_command",
        "Show how opsbot reads a raw model output from stdin: the action, the final answer, or the format error.",
    ),
    "diagnose": Entry(
        "bot.cli.diagnosis:diagnose_command",
        "Answer one question as Slack would: each step as it completes, then the answer (stored, see `traces`).",
    ),
    "demo": Entry(
        "bot.cli.diagnosis:demo_command",
        "Bring the incident sandbox up if needed and diagnose its incident live, step by step.",
    ),
    "eval": Entry(
        "bot.cli.evaluation:eval_command",
        "Diagnose every sandbox scenario through the full path and score it; the run is kept in the trace store.",
    ),
    "classify": Entry(
        "bot.cli.inspection:classify_command",
        "Show how the intent gate routes a message: route, request kind, "
        "probability (confidence), tier (rules/classifier/model/default) and reason.",
    ),
    "serve": Entry(
        "bot.cli.service:serve_command",
        "Serve Slack (Socket Mode when OPSBOT_SLACK__APP_TOKEN is set, else HTTP at /slack/events), the API, /livez.",
    ),
    "init": Entry(
        "bot.cli.setup:init_command",
        "Inspect a stack (Prometheus, logs, deploys) and write a commented config file with the evidence for each "
        "choice; load it with OPSBOT_CONFIG_FILE, then check it with `opsbot doctor`.",
    ),
    "config": Entry(
        "bot.cli.setup:config_command",
        "Print the effective settings and where each one came from (environment, .env, config file, default); "
        "secrets masked.",
    ),
    "doctor": Entry(
        "bot.cli.service:doctor_command",
        "Check the settings, probe each backend, and prove the settings against live data: every catalogue query of "
        "every service returns data; a problem names the setting, where it was set, and what it may have meant.",
    ),
    "toolsets": Entry(
        "bot.cli.toolsets:toolsets_command",
        "Check every toolset (metrics, logs, deploys, kubernetes, runbooks, each MCP server): ok / warn / fail / off.",
    ),
    "mcp": Entry(
        "bot.cli.toolsets:mcp_command",
        "Serve opsbot's read-only incident tools over MCP on stdin/stdout (for an IDE assistant); logs go to stderr.",
    ),
    "intent": Entry(
        "bot.cli.intent:app",
        "Train (and cross-validate) the intent classifier; export 👎-voted messages for labelling.",
    ),
    "traces": Entry("bot.cli.traces:app", "Read stored diagnoses: list, show, search, stats."),
    "logs": Entry(
        "bot.cli.logs:app",
        "Load JSON-lines logs into the SQLite log store, read through the configured field mapping.",
    ),
    "sandbox": Entry("bot.cli.sandbox:app", "Local incident sandbox: Prometheus, SQLite logs, git deploys."),
}


def target_of(entry: Entry) -> Any:
    """The function or typer app an entry names (imports its module)."""
    module, attribute = entry.target.split(":")
    return getattr(importlib.import_module(module), attribute)


def command_from_target(name: str, target: Any) -> _click.Command:
    """The click command typer would build for `target` under `name`, with plain (non-Rich) help."""
    holder = typer.Typer(rich_markup_mode=None, context_settings=CONTEXT_SETTINGS)
    holder.callback()(lambda: None)  # a callback makes the holder a group, so the command keeps its name
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name, cls=TextCommand)(target)
    group = typer.main.get_group(holder)
    command = group.commands[name]
    for sub in getattr(command, "commands", {}).values():  # a group's commands: their own options (not --help)
        pass_text_through(sub.params)
    return command


class TextParam(RuntimeParam):
    """A str, bool or list[str] parameter's value as typer's pydantic adapter returns it, without pydantic."""

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: _click.Context) -> Any:
        if self.annotation in (str, bool) and isinstance(value, self.annotation):
            return value
        if (
            isinstance(value, (list, tuple))
            and self.annotation == list[str]
            and all(isinstance(item, str) for item in value)
        ):
            return list(value)
        return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)  # typer's way


def pass_text_through(params: list[_click.Parameter]) -> list[_click.Parameter]:
    """Give every str, bool and list[str] parameter among `params` a TextParam (once)."""
    for param in params:
        if (
            isinstance(param, _TyperParameter)
            and param._runtime_param is None
            and (param.type_descriptor.annotation in (str, bool, list[str]))
        ):
            param._runtime_param = TextParam(param.type_descriptor.parameter_info, param.type_descriptor.annotation)
    return params


class TextCommand(TyperCommand):
    """A command whose text options, --help included, skip typer's pydantic check (see TextParam)."""

    def get_params(self, ctx: _click.Context) -> list[_click.Parameter]:
        return pass_text_through(super().get_params(ctx))


class LazyGroup(TyperGroup):
    """The root group: commands come from TABLE, built on first use; help lists the table's summaries."""

    def get_params(self, ctx: _click.Context) -> list[_click.Parameter]:
        return pass_text_through(super().get_params(ctx))

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return [*TABLE, *(name for name in self.commands if name not in TABLE)]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name not in self.commands and cmd_name in TABLE:
            self.commands[cmd_name] = command_from_target(cmd_name, target_of(TABLE[cmd_name]))
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        """As click resolves it; notes a `--help` among the command's arguments, so setup can skip Settings."""
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta[HELP_ONLY] = "--help" in rest
        return name, command, rest

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (
                name,
                make_default_short_help(TABLE[name].summary, limit)
                if name in TABLE
                else self.commands[name].get_short_help_str(limit),
            )
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
