"""A calculator tool in verl's tool interface (verl.tools.base_tool.BaseTool), for `verl demo --tools` and
examples/multi_turn/calculator_tool_config.yaml.

execute(parameters={"expression": "12*34+5"}) evaluates an integer expression of +, -, *, parentheses and unary
minus (parsed with `ast`, nothing else is evaluated) and answers with the value as text ("413"); a bad
expression is answered with an error text. It gives no reward of its own (calc_reward is 0): the answer is scored
by the reward function.
"""

import ast
from typing import Any, Optional
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

MAX_EXPRESSION_LENGTH = 200
MAX_ABS_VALUE = 10**18

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
}


def evaluate(expression: str) -> int:
    """The value of an integer expression of + - * ( ) and unary minus; ValueError for anything else."""
    if not isinstance(expression, str):
        raise ValueError("expression must be a string")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"cannot parse {expression!r}") from e

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            result = node.value
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            result = _BINARY[type(node.op)](value(node.left), value(node.right))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = value(node.operand)
            result = -operand if isinstance(node.op, ast.USub) else operand
        else:
            what = type(node.op).__name__ if isinstance(node, (ast.BinOp, ast.UnaryOp)) else type(node).__name__
            raise ValueError(f"unsupported element {what} in {expression!r} (integers, + - * and ( ))")
        if abs(result) > MAX_ABS_VALUE:
            raise ValueError("value too large")
        return result

    return value(tree.body)


class CalculatorTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self._instances = {}

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return self.tool_schema

    async def create(self, instance_id: Optional[str] = None, ground_truth: Optional[str] = None, **kwargs):
        if ground_truth is None:  # verl's agent loop passes create_kwargs={...}
            ground_truth = kwargs.get("create_kwargs", {}).get("ground_truth")
        if instance_id is None:
            instance_id = str(uuid4())
        self._instances[instance_id] = {"ground_truth": ground_truth, "calls": 0}
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        state = self._instances.setdefault(instance_id, {"ground_truth": None, "calls": 0})
        state["calls"] += 1
        expression = parameters.get("expression", "") if isinstance(parameters, dict) else ""
        try:
            text = str(evaluate(expression))
            ok = True
        except ValueError as e:
            text = f"Error: {e}"
            ok = False
        return ToolResponse(text=text), 0.0, {"ok": ok}

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs) -> None:
        self._instances.pop(instance_id, None)
