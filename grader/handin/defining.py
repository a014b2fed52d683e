"""What `cells: definitions` keeps of a notebook's top-level statements, and whether defining one would
run code of the notebook's.

`definitions` keeps what a notebook declares for later cells to use (imports, functions, classes,
constants) and drops what it does. Defining a function or a class runs code before anything is called:
its decorators, its default values (and, without `from __future__ import annotations`, its annotations),
a class's bases, keywords (metaclass=) and body, a base class's `__init_subclass__`, an enumeration's
`__new__` and `__init__` for every member, and an `except` clause's classes once its `try` failed. Under
`definitions` that code would run at import, where a try-out cell's would not: so a definition whose
parts call anything, or read more than a name or a module's attribute, is refused and told
(refused_definition). Only the student's text is read here, never run.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

# Much as the `ipynb` package's `ipynb.fs.defs` (definitions, imports, ALL_CAPS constants), with any name
# bound to a literal kept as a constant: course notebooks write `eps = 1e-5` and `reg = 0.1` in lower
# case. An assignment from a call (`W = np.random.randn(3, 3)`, `data = load_cifar()`) is work and is
# dropped, so a function that reads such a global fails when called, by its name and line.
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Pass)

# The decorators every class body uses (staticmethod, classmethod, property and its setters) are the
# builtins themselves, unless the notebook rebound their names.
_BUILTIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
_PROPERTY_PARTS = frozenset({"setter", "getter", "deleter"})
_BUILTINS = frozenset(dir(builtins))
# Called by type() itself, or by a base's metaclass (pydantic's), when a class is defined or subscripted
# in an annotation: refused however bound, `def` or `__init_subclass__ = f`.
_HOOKS = frozenset(
    {
        "__init_subclass__",
        "__set_name__",
        "__class_getitem__",
        "__prepare__",
        "__mro_entries__",
        "__pydantic_init_subclass__",
    }
)
# The enum module's classes: their metaclass makes every member when the class is defined, through the
# class's own `__new__`, `__init__`, `_generate_next_value_`, `__set_name__`, `__hash__`...; so an
# enumeration's body may define no method whose name starts with an underscore.
_ENUMS = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum", "EnumMeta", "EnumType"})


@dataclass
class Scope:
    """What the definitions kept so far declared, gained statement by statement: their names, which of
    those are enumerations (an enum class, an alias of one, a notebook class deriving from one), and
    whether annotations are left unevaluated (`from __future__ import annotations` kept: it is the
    file's first statement, or the file does not compile at all)."""

    names: set[str] = field(default_factory=set)
    enums: set[str] = field(default_factory=set)
    lazy_annotations: bool = False

    def copy(self) -> Scope:
        return Scope(set(self.names), set(self.enums), self.lazy_annotations)

    def add(self, node: ast.stmt) -> None:
        """`node`, kept: what it binds."""
        self.names |= bound_names(node)
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            self.lazy_annotations |= any(a.name == "annotations" for a in node.names)
        if isinstance(node, ast.ImportFrom) and node.module == "enum":
            self.enums |= {a.asname or a.name for a in node.names if a.name in _ENUMS}
        if isinstance(node, ast.ClassDef) and any(self.enumeration(b) for b in node.bases):
            self.enums.add(node.name)
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            self.enums = (self.enums | names) if self.enumeration(node.value) else (self.enums - names)
        if isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                for statement in block:
                    self.add(statement)

    def enumeration(self, value: ast.expr) -> bool:
        """Whether `value` names an enumeration: `Enum`, `enum.IntFlag`, an alias or a subclass."""
        if isinstance(value, ast.Name):
            return value.id in self.enums
        return isinstance(value, ast.Attribute) and value.attr in _ENUMS


def declares(node: ast.stmt, bound: set[str]) -> bool:
    """Whether `definitions` keeps the top-level `node`: a definition, an import, a constant, a docstring
    (`bound`: the names declared above)."""
    if isinstance(node, _DEFINITIONS):
        return True
    if isinstance(node, ast.Expr):  # a docstring; any other expression is a call or a display
        return isinstance(node.value, ast.Constant)
    if isinstance(node, ast.Assign):
        return all(_plain_target(t) for t in node.targets) and _plain_value(node.value, bound)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and (node.value is None or _plain_value(node.value, bound))
    if isinstance(node, ast.Try):  # try: import torch / except ImportError: torch = None
        blocks = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
        inner = set(bound)
        return all(declares(statement, inner) for block in blocks for statement in block)
    return False


def _plain_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Tuple | ast.List):
        return all(_plain_target(t) for t in target.elts)
    return isinstance(target, ast.Name)


def _plain_value(value: ast.expr, bound: set[str]) -> bool:
    """A literal (`1e-5`, `(3, 4)`, `-1`, `2 ** 10`), a lambda, or a name already declared above and its
    attributes (`torch.float64`): nothing that calls, indexes, reads a value left out or runs an operator
    the notebook may have defined."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):
        return value.id in bound
    if isinstance(value, ast.Attribute):
        return _plain_value(value.value, bound)
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return all(_plain_value(e, bound) for e in value.elts)
    if isinstance(value, ast.Dict):  # a key is hashed: a literal's hash is Python's own
        return all(k is not None and _literal(k) for k in value.keys) and all(
            _plain_value(v, bound) for v in value.values
        )
    if isinstance(value, ast.UnaryOp | ast.BinOp):
        # Operators on literals alone: on a name they may be a notebook class's own (an Enum's __or__)
        return _literal(value)
    if isinstance(value, ast.Lambda):  # its body runs when called; its defaults now
        defaults = [*value.args.defaults, *(d for d in value.args.kw_defaults if d is not None)]
        return all(_plain_value(d, bound) for d in defaults)
    return False


def bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*"}
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, ast.Try):
        blocks = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
        return {name for block in blocks for statement in block for name in bound_names(statement)}
    return set()


def runs_code(node: ast.stmt, scope: Scope) -> str | None:
    """Why defining `node` (a top-level statement `definitions` keeps) would run code, in the student's
    words; None where it would not."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _function_runs(node, scope, properties=None)
    if isinstance(node, ast.ClassDef):
        return _class_runs(node, scope)
    if isinstance(node, ast.AnnAssign):
        return _annotation_runs(node.annotation, scope, "the variable")
    if isinstance(node, ast.Try):
        return _try_runs(node, scope)
    return None


def _try_runs(node: ast.Try, scope: Scope) -> str | None:
    inner = scope.copy()
    for handler in node.handlers:
        # `except E:` evaluates E once the body failed: a missing import is enough
        if handler.type is not None and not _inert(handler.type, inner.names):
            return f"its `except {ast.unparse(handler.type)}` is computed when the import fails"
    for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
        for statement in block:
            why = runs_code(statement, inner)
            if why is not None:
                return why
            inner.add(statement)
    return None


def _annotation_runs(annotation: ast.expr | None, scope: Scope, what: str) -> str | None:
    if annotation is None or scope.lazy_annotations or _inert(annotation, scope.names, subscripts=True):
        return None
    return f"its annotation `{ast.unparse(annotation)}` is computed when {what} is defined"


def _function_runs(
    node: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope, properties: set[str] | None
) -> str | None:
    """`properties`: in a class body, the properties defined above in it (None at the top level)."""
    for decorator in node.decorator_list:
        if properties is None or not _builtin_decorator(decorator, scope.names, properties):
            return f"its decorator `@{ast.unparse(decorator)}` runs when the function is defined"
    arguments = node.args
    for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
        if not _inert(default, scope.names):
            return f"its default value `{ast.unparse(default)}` is computed when the function is defined"
    annotations = [a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    annotations += [arguments.vararg.annotation if arguments.vararg else None, node.returns]
    annotations += [arguments.kwarg.annotation if arguments.kwarg else None]
    for annotation in annotations:
        why = _annotation_runs(annotation, scope, "the function")
        if why is not None:
            return why
    return None


def _class_runs(node: ast.ClassDef, scope: Scope) -> str | None:
    if node.decorator_list:
        return f"its decorator `@{ast.unparse(node.decorator_list[0])}` runs when the class is defined"
    for base in node.bases:
        if not _inert(base, scope.names):
            return f"its base `{ast.unparse(base)}` is computed when the class is defined, or was skipped"
    if node.keywords:
        return f"`{ast.unparse(node.keywords[0])}` runs code of its own when the class is defined"
    enumeration = any(scope.enumeration(b) for b in node.bases)
    inner = scope.copy()
    properties: set[str] = set()
    for statement in node.body:
        why = _member_runs(statement, inner, properties, enumeration)
        if why is not None:
            return why if isinstance(statement, ast.ClassDef) else f"{why} (in class {node.name})"
        inner.add(statement)
        # a name rebound stops being the property whose `.setter` may decorate; its decorators were
        # checked above, so `@property` here is the builtin
        properties -= bound_names(statement)
        if isinstance(statement, ast.FunctionDef) and _is_property(statement):
            properties.add(statement.name)
    return None


def _member_runs(statement: ast.stmt, scope: Scope, properties: set[str], enumeration: bool) -> str | None:
    """Why a statement of a class body runs code when the class is defined."""
    hooks = bound_names(statement) & _HOOKS
    if hooks:
        return f"its `{sorted(hooks)[0]}` is called by Python when a class is defined or subscripted"
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        if enumeration and statement.name.startswith("_"):
            return f"the enumeration's `{statement.name}` runs for every member when the class is defined"
        return _function_runs(statement, scope, properties)
    if isinstance(statement, ast.ClassDef):
        return _class_runs(statement, scope)
    if isinstance(statement, ast.Assign | ast.AnnAssign | ast.Expr | ast.Pass) and declares(
        statement, scope.names
    ):
        if isinstance(statement, ast.AnnAssign):
            return _annotation_runs(statement.annotation, scope, "the class")
        return None
    return f"its body runs `{ast.unparse(statement).splitlines()[0]}` when the class is defined"


def _is_property(node: ast.FunctionDef) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "property")
        or (isinstance(d, ast.Attribute) and d.attr in _PROPERTY_PARTS)
        for d in node.decorator_list
    )


def _builtin_decorator(decorator: ast.expr, bound: set[str], properties: set[str]) -> bool:
    if isinstance(decorator, ast.Name):  # the builtin, not a name the notebook bound
        return decorator.id in _BUILTIN_DECORATORS and decorator.id not in bound
    # @value.setter: a property defined above it in this class body
    return (
        isinstance(decorator, ast.Attribute)
        and decorator.attr in _PROPERTY_PARTS
        and isinstance(decorator.value, ast.Name)
        and decorator.value.id in properties
    )


def _inert(value: ast.expr, bound: set[str], subscripts: bool = False) -> bool:
    """A literal, a tuple or the like of them, arithmetic on literals alone, a name declared above, or a
    dotted one (`np.float64`, `nn.Module`), a lambda whose defaults are so: nothing that calls, or that
    an operator of the notebook's own classes could run. `subscripts`: also `list[int]`, `np.ndarray |
    None` (annotations)."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Name):  # declared above and kept (else a NameError at import), or a builtin
        return value.id in bound or value.id in _BUILTINS
    if isinstance(value, ast.Attribute):
        return _inert(value.value, bound)
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return all(_inert(e, bound, subscripts) for e in value.elts)
    if isinstance(value, ast.Dict):
        return all(k is not None and _literal(k) for k in value.keys) and all(
            _literal(v) for v in value.values
        )
    if isinstance(value, ast.UnaryOp | ast.BinOp):
        if subscripts and isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
            return _inert(value.left, bound, True) and _inert(value.right, bound, True)
        return _literal(value)
    if subscripts and isinstance(value, ast.Subscript):
        return _inert(value.value, bound, True) and _inert(value.slice, bound, True)
    if isinstance(value, ast.Lambda):  # `act=lambda z: z`: its body runs when called, its defaults now
        defaults = [*value.args.defaults, *(d for d in value.args.kw_defaults if d is not None)]
        return all(_inert(d, bound) for d in defaults)
    return False


def _literal(value: ast.expr) -> bool:
    """Numbers, strings and containers of them, with arithmetic on those alone (`2 ** 10`, `-1e-5`)."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return all(_literal(e) for e in value.elts)
    if isinstance(value, ast.Dict):
        return all(k is not None and _literal(k) for k in value.keys) and all(
            _literal(v) for v in value.values
        )
    if isinstance(value, ast.UnaryOp):
        return _literal(value.operand)
    if isinstance(value, ast.BinOp):
        return _literal(value.left) and _literal(value.right)
    return False


def refused_definition(cell: int, line: int, node: ast.stmt, why: str) -> str:
    name = getattr(node, "name", "")
    kind = "class" if isinstance(node, ast.ClassDef) else "def" if name else "statement"
    shown = f"{kind} {name}" if name else ast.unparse(node).splitlines()[0][:60]
    return (
        f"cell {cell}, line {line}: `{shown}` skipped: {why}, at import (cells: definitions runs no "
        "code of the notebook's): compute it inside the function instead, or ask for `cells: all`"
    )
