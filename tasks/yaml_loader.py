"""Strict YAML loading: YAML 1.2 core scalars, no duplicate keys, line numbers kept.

PyYAML's SafeLoader follows YAML 1.1: ``1e-3`` is read as a string, ``no``/``yes``/``on``
as booleans, and of two equal keys the last silently wins. Task configs are small and
hand-written, so each of those is far more likely a mistake than an intent; this loader
reads numbers and booleans as YAML 1.2's core schema does (only ``true``/``false`` are
booleans, ``1e-3`` is a float) and refuses duplicate keys. Every mapping remembers the
line of each key, so later validation errors can point into the file.

``read_yaml_file`` is the one reader of a user's YAML file (task configs, training configs,
leaderboard protocols): a file that cannot be read, bytes that are not UTF-8, a control
character or broken YAML all come out as one ConfigError naming the file and the line.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from .errors import ConfigError

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
# what YAML lets a stream hold (https://yaml.org/spec/1.2.2/#51-character-set); PyYAML's reader
# refuses the rest with a character offset and no line
_NOT_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


class LineDict(dict):
    """A dict that also knows the file and line (1-based) each key was written on."""

    lines: dict
    files: dict


class StrictLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core scalar resolution and duplicate-key errors."""

    source = None


# Start from no implicit resolvers at all, then add only the core schema's.
StrictLoader.yaml_implicit_resolvers = {}
for _tag, _regex, _first in (
    ("tag:yaml.org,2002:bool", _BOOL, "tTfF"),
    ("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", _INT, "-+0123456789"),
    ("tag:yaml.org,2002:float", _FLOAT, "-+0123456789."),
):
    StrictLoader.add_implicit_resolver(_tag, _regex, list(_first))


def _construct_bool(loader, node):
    return loader.construct_scalar(node).lower() == "true"


def _construct_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text, 0)
    return int(text, 0) if text.startswith("0x") else int(text)


def _construct_float(loader, node):
    text = loader.construct_scalar(node).lower()
    if text.endswith("inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    return float("nan") if text.endswith("nan") else float(text)


def _construct_mapping(loader, node):
    loader.flatten_mapping(node)
    out = LineDict()
    out.lines, out.files = {}, {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise ConfigError("mapping keys must be plain scalars", file=loader.source, line=line)
        if key in out:
            raise ConfigError(
                f"duplicate key {key!r} (first defined on line {out.lines[key]})", file=loader.source, line=line
            )
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key], out.files[key] = line, loader.source
    return out


StrictLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def _c_strict_loader():
    """StrictLoader's resolvers and constructors over libyaml's parser, where PyYAML was
    built with it: the same documents, read ~7x faster (importing taigym reads every task
    config to register its id)."""
    try:
        from yaml.constructor import SafeConstructor
        from yaml.cyaml import CParser
        from yaml.resolver import Resolver
    except ImportError:
        return None

    class CStrictLoader(CParser, SafeConstructor, Resolver):
        source = None

        def __init__(self, stream):
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    CStrictLoader.yaml_implicit_resolvers = StrictLoader.yaml_implicit_resolvers
    CStrictLoader.yaml_constructors = StrictLoader.yaml_constructors
    return CStrictLoader


_CStrictLoader = _c_strict_loader()


def _naming(loader, source):
    """``loader`` for one file: its constructors name ``source`` in their errors."""
    return type(loader.__name__, (loader,), {"source": source})


def read_yaml_file(path):
    """The parsed YAML of a user's file."""
    return load_yaml(read_text_file(path), source=str(path))


def read_text_file(path) -> str:
    """A user's text file decoded as UTF-8 (a leading byte-order mark dropped), or a ConfigError
    naming the file and the line of the first byte that is not UTF-8."""
    data = _read_bytes(Path(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = _line_and_column(data, e.start, b"\n")
        raise ConfigError(f"byte 0x{data[e.start]:02x} at column {column} is not UTF-8 (save the file as UTF-8)",
                          file=path, line=line) from None
    return text.removeprefix("\ufeff")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", file=path) from None
    except IsADirectoryError:
        raise ConfigError("is a folder, not a file", file=path) from None
    except OSError as e:
        raise ConfigError(f"cannot read the file: {e.strerror or e}", file=path) from None


def _line_and_column(text, offset: int, newline):
    """1-based line and column of ``offset`` in ``text`` (str or bytes)."""
    start = text.rfind(newline, 0, offset) + 1
    return text.count(newline, 0, offset) + 1, offset - start + 1


def load_yaml(text: str, source=None):
    """Parse YAML text strictly; ``source`` names the file in error messages."""
    _refuse_control_characters(text, source)
    if _CStrictLoader is not None:
        try:
            return yaml.load(text, Loader=_naming(_CStrictLoader, source))
        except Exception:  # noqa: BLE001, S110  (the pure-Python parser below words every error)
            pass
    try:
        return yaml.load(text, Loader=_naming(StrictLoader, source))
    except ConfigError:
        raise
    except yaml.MarkedYAMLError as e:
        line, words = _in_plain_words(e)
        raise ConfigError(f"invalid YAML: {words} (the parser says: {_one_line(e.problem)})", file=source,
                          line=line) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML: {_one_line(e)}", file=source) from None


def _refuse_control_characters(text: str, source) -> None:
    """A control character (a NUL, an escape from a pasted terminal colour...) is refused with its
    line: PyYAML's reader would name only its offset in the stream."""
    found = _NOT_PRINTABLE.search(text)
    if found:
        line, column = _line_and_column(text, found.start(), "\n")
        char = found.group()
        raise ConfigError(f"control character {char!r} (U+{ord(char):04X}) at column {column}", file=source, line=line,
                          expected="printable characters, tabs and line breaks only")


def _one_line(text) -> str:
    return " ".join(str(text or "").split())


def _line(mark):
    return mark.line + 1 if mark is not None else None


def _in_plain_words(e: yaml.MarkedYAMLError) -> tuple[int | None, str]:
    """(line, what is wrong there in plain words) for a parser error.

    PyYAML reports where it gave up in its own grammar's terms ("expected <block end>, but
    found '?'"); a config's author needs the mistake, which for the handful of errors that
    hand-written files make is named by the problem and the context the parser was in."""
    problem, context = e.problem or "", e.context or ""
    opened = _line(e.context_mark)
    if "'\\t'" in problem:
        return _line(e.problem_mark), "a tab character; YAML indents with spaces only"
    if "flow mapping" in context or "flow sequence" in context:
        bracket = "{" if "mapping" in context else "["
        return opened, (f"the '{bracket}' opened on this line is not closed where it should be "
                        "(a missing closing bracket, or a missing ',' between items)")
    if "quoted scalar" in context:
        return opened, "a quote opened on this line is never closed"
    if "simple key" in context:
        return opened, "a line that is neither 'key: value' nor a '- ' list item (a missing ':' after the key?)"
    if problem.startswith("mapping values are not allowed"):
        return _line(e.problem_mark), ("a ':' where no key can start: the line is indented deeper than the key "
                                       "above it expects, or a value holds ': ' and needs quotes")
    if "block mapping" in context or "<block end>" in problem:
        return _line(e.problem_mark), (f"this line's indentation does not line up with the keys above it (the "
                                       f"mapping that starts on line {opened}), or it is a '- ' item where a key "
                                       "is expected")
    if "block collection" in context or "block sequence" in context:
        return _line(e.problem_mark), (f"inside the list that starts on line {opened}, a line that is not a '- ' "
                                       "item at the list's indentation")
    return _line(e.problem_mark), "YAML cannot read this line"


def non_finite_numbers(node, path=()):
    """(key path, value) of every NaN or infinite float in parsed YAML data, depth first."""
    if isinstance(node, float) and not math.isfinite(node):
        yield path, node
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from non_finite_numbers(value, (*path, key))


def where(data, path):
    """(file, line) where the deepest existing key of ``path`` was written, or (None, None)."""
    file = line = None
    node = data
    for part in path:
        if isinstance(node, LineDict) and part in node:
            file, line = node.files.get(part, file), node.lines.get(part, line)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            # keys set by a command-line override have no line
            written = {k: n for k, n in node.lines.items() if n is not None} if isinstance(node, LineDict) else {}
            if written:
                first = min(written, key=written.get)
                file, line = node.files[first], node.lines[first]
        else:
            break
    return file, line
