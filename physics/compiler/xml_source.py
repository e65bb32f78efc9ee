"""The XML layer the MJCF and URDF importers share: a parse that keeps every element's
file and line, and a reader base that turns problems into errors naming them."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Optional
from xml.parsers import expat

import numpy as np

from ..errors import ModelError


@dataclass
class Node:
    tag: str
    attrib: dict
    line: int
    children: list = field(default_factory=list)
    file: Optional[str] = None  # set on elements that came from an included file

    def all(self, tag: str) -> list:
        return [c for c in self.children if c.tag == tag]


# The deepest an element may sit, the top element being at depth 1. MuJoCo's XML parser
# (tinyxml2) refuses about as deep a file (499 nested elements that have content), so every
# file MuJoCo reads is read here; a chain of bodies may be ~500 deep, which the importers
# (no call per level) and the engine (loops over the tree) handle like a shallow one.
MAX_DEPTH = 500


def parse_xml(text, file: str) -> Node:
    """Parse with expat so that every element keeps the line it starts on. Elements
    nested deeper than MAX_DEPTH raise a ModelError naming the first such element."""
    parser = expat.ParserCreate()
    stack: list[Node] = []
    top: list[Node] = []

    def start(tag, attrs):
        if len(stack) >= MAX_DEPTH:
            name = attrs.get("name")
            raise ModelError(f"elements nest at most {MAX_DEPTH} deep (MuJoCo's XML limit is about the same); "
                             f"this one is at depth {len(stack) + 1}", file=file, line=parser.CurrentLineNumber,
                             element=f"{tag} '{name}'" if name else tag)
        node = Node(tag, dict(attrs), parser.CurrentLineNumber)
        (stack[-1].children if stack else top).append(node)
        stack.append(node)

    def end(tag):
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as e:
        raise ModelError(f"malformed XML: {expat.ErrorString(e.code)} (column {e.offset + 1})",
                         file=file, line=e.lineno) from None
    return top[0]


class XmlReader:
    """Error reporting and number parsing for an importer reading ``file``.

    Unsupported content raises under ``strict``; otherwise it is collected and reported
    once, by :meth:`warn_ignored`, when the model has been read.
    """

    format = "XML"

    def __init__(self, file: str, strict: bool):
        self.file = file
        self.strict = strict
        self.ignored: list[tuple[str, int, str]] = []

    def error(self, message, node: Optional[Node] = None, element=None, attribute=None, line=None):
        file = node.file if node is not None and node.file else self.file
        return ModelError(message, file=file, element=element, attribute=attribute,
                          line=line if line is not None else (node.line if node is not None else None))

    def unsupported(self, what: str, node: Node, element=None, attribute=None):
        """Unsupported content: an error when strict, otherwise recorded for the warning."""
        if self.strict:
            raise self.error(f"{what} is not supported; pass strict=False to ignore it", node, element, attribute)
        where = f" in {element}" if element else ""
        file = node.file or self.file
        self.ignored.append((file, node.line, f"{'' if file == self.file else file + ' '}line {node.line}: {what}{where}"))

    def warn_ignored(self, stacklevel: int = 4) -> None:
        if self.ignored:
            items = [text for *_, text in sorted(self.ignored, key=lambda item: (item[0] != self.file, item[:2]))]
            warnings.warn(f"{self.file}: ignored {len(items)} unsupported {self.format} item(s): " + "; ".join(items),
                          UserWarning, stacklevel=stacklevel)

    def parse_floats(self, raw: str, node: Node, attr: str, element, sizes) -> np.ndarray:
        """``raw`` as finite numbers; ``sizes`` are the accepted counts."""
        try:
            values = np.array([float(t) for t in raw.split()], dtype=float)
        except ValueError:
            raise self.error(f"expected {_counts(sizes)} number(s), got {raw!r}", node, element, attr) from None
        if values.size not in sizes or not np.all(np.isfinite(values)):
            raise self.error(f"expected {_counts(sizes)} finite number(s), got {raw!r}", node, element, attr)
        return values


def _counts(sizes) -> str:
    sizes = sorted(sizes)
    return str(sizes[0]) if len(sizes) == 1 else f"{', '.join(map(str, sizes[:-1]))} or {sizes[-1]}"
