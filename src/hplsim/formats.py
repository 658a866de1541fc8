"""The format layer: each artefact's fields declared once (type, unit, range, default,
whether required), read by one function that turns any violation into one `HplsimError`
in the project's one style::

    hplsim: error: platform spec p.yaml: network.bandwidth: expected a positive bandwidth, got '0GBps'

that is ``<what and which file>: <field path>: expected <what a valid value is>, got
<the value found>``.

Why our own small layer and not pydantic v2 (or attrs + cattrs):

- The values come from YAML 1.1 (PyYAML), whose types are loose in ways a generic schema
  library handles wrongly for us: ``1e-11`` without a dot is a *string*, ``yes`` is a
  boolean and a boolean is an ``int`` to Python. Each artefact already has its own rule for
  these (a bandwidth needs a unit, a seed is an integer and never a boolean, a model
  coefficient may be ``1e-11``); pydantic's lax mode would coerce ``"5"`` to 5 and
  ``True`` to 1, its strict mode would refuse ``1e-11``: either way the accepted inputs
  would change, which this layer must not do. Here a field's converter is the artefact's
  own rule, written once.
- The messages must read as hplsim's (file, dotted field path, expected, got) and keep the
  wording tests and users rely on; pydantic's are its own (``Input should be a valid
  integer [type=int_type, …]``, with a link) and would have to be rewritten from its
  error list anyway.
- It would be one more dependency (pydantic-core is a compiled wheel; it is not even in
  the project's virtualenv today) and one more import on every command's start, for a
  few dozen fields; this module is a couple of hundred lines and imports nothing beyond
  the standard library and `errors`.

A `Record` maps field names to `Field` (a leaf, with a converter) or to a nested `Record`
(a mapping section); `read` returns plain dicts with every declared field present (the
default where absent). A reader of a nested part that does not know the file's name
(the model file's kernels) uses `check`, whose `FieldError` the caller turns into the
user's error with `FieldError.at(source)`. Checks that involve several fields (a fat-tree's leaves against the
node count) stay in the artefact's reader and raise through `error`, in the same style.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from hplsim.errors import HplsimError


def read_text(path: Path | str, what: str) -> str:
    """A document's text, or one error naming `what` it is and the file: it cannot be read
    (``cannot read model file m.yaml: No such file or directory``) or is not text
    (``model file m.yaml: not a text file``).

    >>> read_text("/nonexistent.yaml", "model file")
    Traceback (most recent call last):
    hplsim.errors.HplsimError: cannot read model file /nonexistent.yaml: No such file or directory
    """
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise HplsimError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HplsimError(f"{what} {path}: not a text file") from None


def safe_loader() -> type:
    """PyYAML's safe loader on libyaml's parser when PyYAML was built with it: the same
    constructor, so the same documents, seven times faster (the Dahu model file: 0.16 s of
    every `hplsim predict` in pure Python)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, where: str, what: str = "YAML") -> Any:
    """A document parsed from YAML (JSON is YAML), or one error ``WHERE: not valid WHAT at
    line L``.

    >>> parse_yaml("nodes: [1,", "platform spec p.yaml")
    Traceback (most recent call last):
    hplsim.errors.HplsimError: platform spec p.yaml: not valid YAML at line 1
    """
    import yaml  # here: PyYAML is not needed by the modules that only declare fields

    try:
        return yaml.load(text, Loader=safe_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # libyaml marks an error at the end of the text on the line after the last one
        lines = max(1, len(text.splitlines()))
        line = f" at line {min(mark.line + 1, lines)}" if mark else ""
        raise HplsimError(f"{where}: not valid {what}{line}") from None


class Invalid(Exception):
    """Raised by a converter: the value is not what the field expects. `expected` says what
    would be (``a positive integer``); `got` overrides how the value is shown; `at` is the
    key or index inside the value where the fault is (an entry of a free mapping or list)."""

    def __init__(self, expected: str, got: str | None = None, at: str | int | None = None):
        super().__init__(expected)
        self.expected = expected
        self.got = got
        self.at = at


def shown(value: Any) -> str:
    """A value as an error shows it: its repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def kind_of(value: Any) -> str:
    """How an error shows a value of the wrong shape: its type's name, or ``nothing``."""
    return "nothing" if value is None else type(value).__name__


def error(source: str, path: str, expected: str, got: Any = None, *, shown_as: str | None = None) -> HplsimError:
    """The one error of a bad field: ``SOURCE: PATH: expected EXPECTED, got GOT``."""
    return FieldError(path, expected, got, shown_as=shown_as).at(source)


class FieldError(Exception):
    """A bad field found by a reader that does not know its file's name (a nested part of a
    document): `at(source)` makes it the user's error once the file is known."""

    def __init__(self, path: str, expected: str, got: Any = None, *, shown_as: str | None = None):
        self.path, self.expected = path, expected
        self.shown = shown_as if shown_as is not None else shown(got)
        super().__init__(f"{path}: expected {expected}, got {self.shown}" if path else
                         f"expected {expected}, got {self.shown}")

    def at(self, source: str) -> HplsimError:
        return HplsimError(f"{source}: {self}")


def join(path: str, key: Any) -> str:
    """The dotted path of a field (``network.bandwidth``), ``[i]`` for a list item."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


Converter = Callable[[Any], Any]


@dataclass(frozen=True)
class Field:
    """One leaf field. `convert` checks and converts a present value (raising `Invalid`);
    `expected` says what a value must be, for a missing required field and the docs.
    `null_is_absent`: a YAML ``null`` stands for the default (most of our formats say so)."""

    convert: Converter
    expected: str
    default: Any = None
    required: bool = False
    unit: str = ""
    doc: str = ""
    null_is_absent: bool = True


@dataclass(frozen=True)
class Record:
    """A mapping with declared fields. `name` (``'network'``) is how an error calls a value
    that is not a mapping; `optional`: a section that may be absent or null (read as {})."""

    fields: Mapping[str, "Field | Record"]
    name: str = "a mapping"
    optional: bool = True
    extra: bool = False  # keys beyond the declared ones are kept as they are


def read(record: Record, doc: Any, source: str, path: str = "") -> dict[str, Any]:
    """`doc` checked against `record`: a dict of every declared field (converted, or its
    default), plus the undeclared keys when the record allows them; else one HplsimError."""
    try:
        return check(record, doc, path)
    except FieldError as exc:
        raise exc.at(source) from None


def check(record: Record, doc: Any, path: str = "") -> dict[str, Any]:
    """`read` for a part of a document whose file is named by the caller: a `FieldError`."""
    if not doc and record.optional:  # absent, null or empty: every field's default
        doc = {}
    if not isinstance(doc, Mapping):
        raise FieldError(path, record.name if path else f"{record.name} at the top level", shown_as=kind_of(doc))
    unknown = [k for k in doc if k not in record.fields]
    if unknown and not record.extra:
        raise FieldError(path, f"only the fields {', '.join(record.fields)}",
                         shown_as=f"unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    out: dict[str, Any] = {k: doc[k] for k in unknown}
    for name, spec in record.fields.items():
        where = join(path, name)
        value = doc.get(name)
        if isinstance(spec, Record):
            out[name] = check(spec, value, where)
            continue
        if name not in doc or (value is None and spec.null_is_absent):
            if spec.required:
                raise FieldError(where, f"{spec.expected} (the field is required)", shown_as="nothing")
            out[name] = spec.default
            continue
        try:
            out[name] = spec.convert(value)
        except Invalid as exc:
            raise FieldError(where if exc.at is None else join(where, exc.at), exc.expected,
                             value if exc.at is None else value[exc.at], shown_as=exc.got) from None
    return out


# ---------------------------------------------------------------- common converters


def integer(minimum: int | None = None, maximum: int | None = None, what: str = "",
            floats: bool = False) -> Converter:
    """A whole number (never a boolean, whatever YAML or Python say) in [minimum, maximum];
    with `floats`, a float with an integer value (``4.0``) too."""
    if not what:
        what = ("a positive integer" if minimum == 1 and maximum is None else
                "an integer" + (f" in {minimum} .. {maximum}" if minimum is not None and maximum is not None else
                                f" >= {minimum}" if minimum is not None else ""))

    def convert(value: Any) -> int:
        if floats and isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(what)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise Invalid(what)
        return value

    return convert


def number(minimum: float | None = None, positive: bool = False, what: str = "",
           strings: bool = True) -> Converter:
    """A finite real number (an int or a float, not a boolean; with `strings`, a string that
    reads as one, such as YAML 1.1's ``1e-6``), > 0 when `positive`, >= `minimum`."""
    what = what or ("a positive number" if positive else
                    f"a finite number >= {minimum}" if minimum is not None else "a finite number")

    def convert(value: Any) -> float:
        if isinstance(value, bool) or (not strings and not isinstance(value, (int, float))):
            raise Invalid(what)
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise Invalid(what) from None
        if not math.isfinite(x) or (positive and x <= 0) or (minimum is not None and x < minimum):
            raise Invalid(what)
        return x

    return convert


def one_of(choices: tuple[str, ...], normalise: Callable[[str], str] = str) -> Converter:
    """One of a few names (after `normalise`, e.g. ``str.upper``)."""
    what = "one of " + ", ".join(choices)

    def convert(value: Any) -> str:
        text = normalise(str(value))
        if text not in choices:
            raise Invalid(what)
        return text

    return convert


def text(forbidden: str = "", what: str = "printable text") -> Converter:
    """Any scalar as text, printable, without the `forbidden` characters."""

    def convert(value: Any) -> str:
        s = str(value)
        if not s.isprintable() or any(c in s for c in forbidden):
            raise Invalid(what)
        return s

    return convert


def mapping(what: str = "a mapping") -> Converter:
    def convert(value: Any) -> Mapping:
        if not isinstance(value, Mapping):
            raise Invalid(what, got=type(value).__name__)
        return value

    return convert


def exactly(expected_value: Any, what: str = "") -> Converter:
    """A constant (a format name, a version): that value or nothing."""

    def convert(value: Any) -> Any:
        if value != expected_value:
            raise Invalid(what or repr(expected_value))
        return value

    return convert


def described(record: Record, prefix: str = "") -> list[tuple[str, str, str]]:
    """(field path, expected, unit) of every leaf field: what a format page lists."""
    rows: list[tuple[str, str, str]] = []
    for name, spec in record.fields.items():
        if isinstance(spec, Record):
            rows += described(spec, join(prefix, name))
        else:
            rows.append((join(prefix, name), spec.expected, spec.unit))
    return rows
