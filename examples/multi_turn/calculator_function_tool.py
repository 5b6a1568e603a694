"""The calculator of calculator_tool_config.yaml as a verl @function_tool (multi_turn.function_tool_path): the
same name, schema and answers, written as one function instead of a BaseTool class.

  verl train ... actor_rollout_ref.rollout.multi_turn.enable=true \
      actor_rollout_ref.rollout.multi_turn.function_tool_path=examples/multi_turn/calculator_function_tool.py

verl.cpp puts this file's folder on sys.path, so `calculator_tool` (the expression evaluator) is found; with verl,
add the folder to PYTHONPATH.
"""
from calculator_tool import evaluate

from verl.tools.function_tool import function_tool


@function_tool
def calculator(expression: str):
    """Integer arithmetic with + - * and parentheses.

    Args:
        expression: For example 12*34+5
    """
    try:
        return str(evaluate(expression)), 0.0, {"ok": True}
    except ValueError as e:
        return f"Error: {e}", 0.0, {"ok": False}
