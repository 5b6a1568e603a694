"""Functions whose tool schemas are inferred from their docstrings and type hints: the cases of
test_function_tool_oracle.cpp, compared between transformers.utils.get_json_schema (which verl's @function_tool
calls) and verl.cpp's verl.tools.function_tool.get_json_schema. Some are meant to fail; both must then raise.
"""
from pathlib import Path
from typing import Any, List, Literal, Optional, Union


def multiply(x: float, y: float):
    """
    A function that multiplies two numbers

    Args:
        x: The first number to multiply
        y: The second number to multiply
    """
    return x * y


def search(query: str, limit: int = 10, lang: Optional[str] = None) -> list[str]:
    """Searches the web.

    The summary goes on
    over two lines.

    Args:
        query: What to look for. It may span
            two lines, indented.

        limit: How many results (at most 50)
        lang: A language code such as en or de

    Returns:
        The result titles,
        one per entry.

    Raises:
        ValueError: when the query is empty
    """
    return []


def unions(a: int | str, b: Union[int, float, None], c: float | None = None, d: Union[list[int], dict[str, int]] = None):
    """Unions of every kind.

    Args:
        a: int or str
        b: a number or nothing
        c: float or None
        d: a list or a dict
    """


def literals(mode: Literal["fast", "slow"], level: Literal[1, 2, "three"], flag: Literal[True, None] = None,
             pick: Optional[Literal["a", "b"]] = None):
    """Literal choices.

    Args:
        mode: The speed
        level: A level
        flag: A flag
        pick: One letter or none
    """


def containers(xs: list[int], m: dict[str, float], pair: tuple[int, str], raw: list, d: dict, old: List[Optional[int]],
               nested: dict[str, list[int]], bare_tuple: tuple = ()):
    """Containers.

    Args:
        xs: integers
        m: a mapping
        pair: an int and a string
        raw: a bare list
        d: a bare dict
        old: typing.List of optional ints
        nested: lists by key
        bare_tuple: a bare tuple
    """


def drink(beverage: str, size: str = "m"):
    """Drinks a beverage.

    Args:
        beverage: The beverage to drink (choices: ["tea", "coffee"])
        size: The cup (CHOICES: [" s", "m ", "l"])
    """


class Holder:
    def method(self, x: int) -> int:
        """A method.

        Args:
            x: A number

        Returns:
            Twice x
        """
        return 2 * x

    @classmethod
    def build(cls, name: str):
        """A class method.

        Args:
            name: The name
        """


method = Holder().method
unbound = Holder.method
build = Holder.build


def custom_class(where: Path, bool_flag: bool = False):
    """A custom class is an object.

    Args:
        where: A path
        bool_flag: A switch
    """


async def fetch(url: str, timeout: float = 5.0) -> str:
    """Fetches a URL, e.g. http://example.com: the body as text.

    Args:
        url: The address, e.g. https://x.org/a:b
        timeout: Seconds
    """
    return ""


def now() -> str:
    """The time now."""
    return ""


def no_args_documented() -> int:
    """Counts.

    Returns:
        A count
    """
    return 0


def summary_mentions_args(x: int):
    """Parses Args: and more from the text

    Args:
        x: A value
    """


def note_line(x: int, y: int):
    """Notes inside the arguments.

    Args:
        x: The first
            Example: 5
        y: The second
    """


def returns_no_newline(x: int) -> int:
    """Returns: inline, not a block.

    Args:
        x: A value
    Returns: x again
    """
    return x


def args_trailing_space(x: int):
    """The header has a trailing space.

    Args: 
        x: A value
    """


def any_param(x: Any):
    """Any value.

    Args:
        x: Whatever
    """


# ---- these raise in both
def no_docstring(x: int):
    return x


def missing_hint(x, y: int):
    """Missing a hint.

    Args:
        x: no hint
        y: a hint
    """


def typed_description(x: int):
    """Google style with the type in parentheses.

    Args:
        x (int): A value
    """


def undocumented_arg(x: int, y: int):
    """Documents one of two.

    Args:
        x: A value
    """


def single_tuple(x: tuple[int]):
    """A one-element tuple.

    Args:
        x: one int
    """


def ellipsis_tuple(x: tuple[int, ...]):
    """A variable tuple.

    Args:
        x: ints
    """


def bad_literal(x: Literal[b"raw"]):
    """Bytes literal.

    Args:
        x: bytes
    """


def int_choices(x: int):
    """Integer choices.

    Args:
        x: A number (choices: [1, 2])
    """


def unknown_generic(x: set[int]):
    """A set.

    Args:
        x: numbers
    """


CASES = [
    multiply, search, unions, literals, containers, drink, method, unbound, build, custom_class, fetch, now,
    no_args_documented, summary_mentions_args, note_line, returns_no_newline, args_trailing_space, any_param,
    no_docstring, missing_hint, typed_description, undocumented_arg, single_tuple, ellipsis_tuple, bad_literal,
    int_choices, unknown_generic,
]
