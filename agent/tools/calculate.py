import ast
import operator
from collections.abc import Callable

from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool

_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


class CalcInput(BaseModel):
    expression: str = Field(
        min_length=1, max_length=200, description="Arithmetic only, e.g. (12.5 * 4) / 3"
    )


def _eval(node: ast.AST) -> float:
    # Walk the syntax tree ourselves: eval() would run arbitrary code.
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.operand))
    raise ValueError("only numbers and + - * / // % ** ( ) are allowed")


@define_tool(description="Evaluate an arithmetic expression exactly and return the result.")
def calculate(input: CalcInput, ctx: ToolContext) -> dict[str, object]:
    try:
        value = _eval(ast.parse(input.expression, mode="eval").body)
    except ZeroDivisionError:
        return {"expression": input.expression, "error": "division by zero"}
    except (ValueError, SyntaxError) as exc:
        return {"expression": input.expression, "error": str(exc)}
    return {"expression": input.expression, "result": value}
