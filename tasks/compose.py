"""Config composition: ``extends:`` inheritance and ``key.sub=value`` overrides.

A config may name one parent or a list of parents in ``extends:`` (paths relative to its
own file, or else to the shipped ``configs/tasks/``); parents merge left to right, then the child on top. Mappings merge key by
key; anything else (lists included) is replaced whole, as in Hydra. Every key keeps the
file and line it was written on, so errors point at the file that set the value.
"""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError
from .yaml_loader import LineDict, load_yaml, read_yaml_file

OVERRIDE_SOURCE = "<command line>"


def read_config_file(path, _chain=()) -> LineDict:
    """Load a YAML task config with its ``extends:`` parents merged in."""
    path = Path(path).resolve()
    if path in _chain:
        cycle = " -> ".join(p.name for p in (*_chain, path))
        raise ConfigError(f"extends cycle: {cycle}", file=path, path=("extends",))
    if not path.is_file():
        raise ConfigError("config file not found", file=path)
    data = read_yaml_file(path)
    if not isinstance(data, dict):
        raise ConfigError("a task config must be a mapping at the top level", file=path, expected="key: value pairs")
    parents = data.pop("extends", None)
    if parents is None:
        return data
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise ConfigError("must be a file name or a list of file names", file=path, line=data.lines.get("extends"),
                          path=("extends",))
    merged = _empty()
    for parent in parents:
        target = _parent_file(path, parent, data.lines.get("extends"))
        merged = merge(merged, read_config_file(target, (*_chain, path)))
    return merge(merged, data)


def _parent_file(path: Path, parent: str, line) -> Path:
    """A parent named in ``extends:``: next to the file, else among the shipped task configs,
    so that a copy of a shipped config works from any folder."""
    shipped = _shipped_tasks()
    for folder in (path.parent, shipped):
        if folder is not None and (folder / parent).is_file():
            return folder / parent
    places = f"next to this file ({path.parent})" + (f" or among the shipped configs ({shipped})" if shipped else "")
    raise ConfigError(f"parent config {parent!r} not found {places}", file=path, line=line, path=("extends",))


def _shipped_tasks():
    import importlib.resources

    try:
        folder = Path(str(importlib.resources.files("taigym.configs"))) / "tasks"
    except ModuleNotFoundError:
        return None
    return folder if folder.is_dir() else None


def merge(base, over):
    """``over`` on top of ``base``: mappings merge recursively, other values replace."""
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return over
    out = _empty()
    for src in (base, over):
        for key, value in src.items():
            out[key] = merge(out[key], value) if key in out and src is over else value
            out.lines[key] = getattr(src, "lines", {}).get(key)
            out.files[key] = getattr(src, "files", {}).get(key)
    return out


def apply_overrides(data: dict, overrides) -> dict:
    """Apply ``["a.b=1", ...]`` or ``{"a.b": 1}`` overrides; string values parse as YAML."""
    if isinstance(overrides, dict):
        items = list(overrides.items())
    else:
        items = []
        for text in overrides or ():
            if "=" not in str(text):
                raise ConfigError(f"override {text!r} is not of the form key.sub=value", file=OVERRIDE_SOURCE)
            key, value = str(text).split("=", 1)
            items.append((key.strip(), load_yaml(value, source=OVERRIDE_SOURCE) if value.strip() else None))
    for key, value in items:
        data = _set_path(data, key, value)
    return data


def _set_path(data, dotted: str, value):
    parts = [int(p) if p.lstrip("-").isdigit() else p for p in dotted.split(".")]
    root = _copy(data)  # overrides never edit a parent's (possibly shared) mapping
    node = root
    for i, part in enumerate(parts):
        here = parts[: i + 1]
        if isinstance(node, list):
            if not isinstance(part, int) or not -len(node) <= part < len(node):
                raise ConfigError(f"index {part!r} is out of range for a list of {len(node)}",
                                  file=OVERRIDE_SOURCE, path=here)
        elif not isinstance(node, dict):
            raise ConfigError(f"cannot set a key inside a {type(node).__name__}", file=OVERRIDE_SOURCE, path=parts[:i])
        if i == len(parts) - 1:
            node[part] = value
            if isinstance(node, LineDict):
                # errors about this key should name the command line, not a YAML file
                node.files[part], node.lines[part] = OVERRIDE_SOURCE, None
            break
        child = node[part] if isinstance(node, list) else node.get(part)
        if not isinstance(child, (dict, list)):
            child = _empty()
        node[part] = _copy(child)
        if isinstance(node, LineDict) and part not in node.files:
            node.files[part], node.lines[part] = OVERRIDE_SOURCE, None
        node = node[part]
    return root


def _copy(value):
    if isinstance(value, dict):
        return merge(_empty(), value)
    return list(value) if isinstance(value, list) else value


def _empty() -> LineDict:
    out = LineDict()
    out.lines, out.files = {}, {}
    return out
