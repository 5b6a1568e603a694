"""@function_tool tools as a verl user writes them (multi_turn.function_tool_path): the cases of
test_function_tool_oracle.cpp, loaded by verl 0.9.1's load_function_tools_from_path in .venv/test and by verl.cpp's
ToolSet. RETURN_CASES are return values, each given by the oracle_return tool, compared after verl's
normalize_function_tool_return.
"""
from typing import Literal, Optional

from verl.tools.function_tool import function_tool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse


@function_tool
def oracle_weather(city: str, unit: Literal["c", "f"] = "c", days: Optional[int] = None) -> str:
    """Gets the weather forecast.

    Looks the city up first.

    Args:
        city: The city, e.g. Paris: the capital
        unit: Degrees (choices: ["c", "f"])
        days: How many days ahead,
            at most 7

    Returns:
        The forecast as text
    """
    return f"{city}: sunny"


@function_tool("oracle_renamed")
async def oracle_original(values: list[float], weights: dict[str, float], mode: int | str = 1) -> float:
    """Weighted sum.

    Args:
        values: The numbers
        weights: Weight by name
        mode: A mode
    """
    return 0.0


@function_tool(schema={"type": "function", "function": {"name": "oracle_explicit", "description": "Given",
                       "parameters": {"type": "object", "properties": {"q": {"type": "string", "enum": ["a"]}},
                                      "required": ["q"]}}})
def oracle_explicit(q):
    return q


# verl registers a tool given a schema under the function's name, whatever name the schema shows the model.
@function_tool(schema={"type": "function", "function": {"name": "oracle_schema_name", "description": "Named twice"}})
def oracle_function_name():
    return "n"


@function_tool(schema=OpenAIFunctionToolSchema.model_validate(
    {"type": "function", "function": {"name": "oracle_model", "description": "A model", "strict": True}}))
def oracle_model():
    return "m"


@function_tool
def oracle_flags(on: bool, level: Literal[1, 2, 3], tags: list[str], pair: tuple[int, str] = (0, "")):
    """Flags of every kind.

    Args:
        on: A switch
        level: A level
        tags: Some tags
        pair: A pair
    """


RETURN_CASES = [
    "'plain text'",
    "''",
    "{'a': 1, 'b': [1, 2], 'c': '\u00e9'}",
    "{}",
    "('t',)",
    "('t', 1)",
    "('t', None, None)",
    "('t', 2.5, {'k': 1, 'n': None})",
    "(ToolResponse(text='x'), 1, [('a', 1)])",
    "(ToolResponse(), 0.5)",
    "({'a': [1, 2]}, True)",
    "(42, -1.25, {})",
    "42",
    "3.5",
    "None",
    "['a', 1]",
    "ToolResponse(text='direct')",
    "True",
    "()",
    "(1, 2, 3, 4)",
    "('t', 'abc')",
    "('t', 1, 5)",
]


@function_tool
def oracle_return(case: int):
    """Returns RETURN_CASES[case].

    Args:
        case: The index
    """
    return eval(RETURN_CASES[case], {"ToolResponse": ToolResponse})
