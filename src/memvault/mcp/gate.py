"""Checks every `tools/call` against the tool's published input schema before the SDK sees it.

Two reasons, both about the bound scope and the no-values rule:
- an argument the schema does not list (`user_id`, `tenant`, anything) is refused, not silently
  dropped, so a model that tries to pick a scope learns at once that it cannot;
- a value outside the schema is refused with the field and the rule it broke (`text:
  maxLength`), never with the value: the SDK's own validation message quotes the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

MAX_PROBLEMS = 10
MAX_NAME_CHARS = 64


def refusal(message: str) -> CallToolResult:
    """A tool-level error result (`isError: true`) the model can read and correct, worded like
    the SDK's own tool errors (`Error executing tool NAME: CODE: MESSAGE`)."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _field(path: Any) -> str:
    name = ".".join(str(p) for p in path) or "arguments"
    return name[:MAX_NAME_CHARS]


def argument_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """`field: rule` for each way `arguments` break `schema`, unknown fields first."""
    known = set(schema.get("properties") or ())
    problems = [
        f"{name[:MAX_NAME_CHARS]}: unknown argument" for name in arguments if name not in known
    ]
    validator = Draft202012Validator(dict(schema))
    for error in sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path)):
        if error.validator == "additionalProperties" and not error.absolute_path:
            continue  # the unknown arguments, named above
        problems.append(f"{_field(error.absolute_path)}: {_rule(error)}")
    return problems


def _rule(error: ValidationError) -> str:
    """The rule an argument broke. For an optional field (`anyOf: [{...}, {type: null}]`) that
    is the rule of the branch it was meant for (`pattern`, `maxLength`), not `anyOf`."""
    if error.validator == "anyOf" and error.context:
        meant = [e for e in error.context if e.validator != "type"]
        if meant:
            return str(meant[0].validator)
    return str(error.validator)


def close_schemas(server: MCPServer[Any]) -> None:
    """Mark every registered tool's input schema `additionalProperties: false`, as the gate
    enforces: a client reading the schema learns that unknown arguments are refused."""
    for tool in server._tool_manager.list_tools():
        tool.parameters["additionalProperties"] = False


class ArgumentGate:
    """Server middleware: refuses a `tools/call` whose arguments break the tool's input schema."""

    def __init__(self, server: MCPServer[Any]) -> None:
        self._server = server
        self._schemas: dict[str, dict[str, Any]] | None = None

    async def _schema(self, name: str) -> dict[str, Any] | None:
        if self._schemas is None:
            tools = await self._server.list_tools()
            self._schemas = {tool.name: dict(tool.input_schema) for tool in tools}
        return self._schemas.get(name)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping):
            name = ctx.params.get("name")
            arguments = ctx.params.get("arguments") or {}
            schema = await self._schema(name) if isinstance(name, str) else None
            if isinstance(name, str) and schema is None:  # never echo a long name in full
                return refusal(f"Unknown tool: {name[:MAX_NAME_CHARS]}")
            if schema is not None and isinstance(arguments, Mapping):
                problems = argument_problems(schema, arguments)
                if problems:
                    shown = "; ".join(problems[:MAX_PROBLEMS])
                    more = len(problems) - MAX_PROBLEMS
                    if more > 0:
                        shown += f"; and {more} more problems"
                    return refusal(f"Error executing tool {name}: invalid_request: {shown}")
        return await call_next(ctx)
