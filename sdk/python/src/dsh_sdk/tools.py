"""Host tools: Python functions the model is offered beside dsh's own tools. dsh runs each call
through its pipeline (hooks, Auto review, the arguments checked against the schema) and then
asks the client to run it; the function's return value is the result the model reads, and an
exception's text the call's error."""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Dict, Optional

_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
          dict: "object"}


class Tool:
    """A function offered to the model as a tool (made by `@tool`)."""

    def __init__(self, function: Callable[..., Any], name: str, description: str,
                 input_schema: Dict[str, Any]):
        self.function = function
        self.name = name
        self.description = description
        self.input_schema = input_schema

    def declaration(self) -> Dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "inputSchema": self.input_schema}

    async def run(self, arguments: Dict[str, Any]) -> str:
        """The function's result for `arguments` as text (JSON unless it is a string)."""
        result = self.function(**arguments)
        if inspect.isawaitable(result):
            result = await result
        return result if isinstance(result, str) else json.dumps(result)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def _schema_of(function: Callable[..., Any]) -> Dict[str, Any]:
    """An object schema from the function's parameters: their annotated types (str, int,
    float, bool, list, dict), and those without a default required."""
    properties: Dict[str, Any] = {}
    required = []
    hints = getattr(function, "__annotations__", {})
    for parameter in inspect.signature(function).parameters.values():
        kind = hints.get(parameter.name)
        properties[parameter.name] = {"type": _TYPES[kind]} if kind in _TYPES else {}
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    return {"type": "object", "properties": properties, "required": required}


def tool(function: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None,
         description: Optional[str] = None,
         input_schema: Optional[Dict[str, Any]] = None) -> Any:
    """Makes a function a host tool: `@tool` or `@tool(description=..., input_schema=...)`.
    The name defaults to the function's, the description to its docstring, the schema to one
    drawn from its parameters; the model's arguments are passed as keyword arguments."""

    def make(function: Callable[..., Any]) -> Tool:
        return Tool(function, name or function.__name__,
                    description if description is not None else inspect.getdoc(function) or "",
                    input_schema or _schema_of(function))

    return make(function) if function is not None else make
